package attributes

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/auditlog"
)

func TestOf(t *testing.T) {
	tests := []struct {
		method, url string
		header      http.Header
		want        []auditlog.Request
	}{
		{"GET", "/api/v1/namespaces/a/pods", nil,
			[]auditlog.Request{{Verb: "list", Resource: "pods", Namespace: "a"}}},
		{"GET", "/api/v1/namespaces/a/pods?watch=true", nil,
			[]auditlog.Request{{Verb: "watch", Resource: "pods", Namespace: "a"}}},
		{"GET", "/api/v1/namespaces/a/pods?fieldSelector=metadata.name%3Dweb&watch=1", nil,
			[]auditlog.Request{{Verb: "watch", Resource: "pods", Namespace: "a", Name: "web"}}},
		{"POST", "/api/v1/namespaces/a/pods/web/exec?command=ls", nil,
			[]auditlog.Request{{Verb: "create", Resource: "pods", Subresource: "exec", Namespace: "a", Name: "web"}}},
		{"PATCH", "/apis/apps/v1/namespaces/a/deployments/d/scale", nil,
			[]auditlog.Request{{Verb: "patch", APIGroup: "apps", Resource: "deployments", Subresource: "scale",
				Namespace: "a", Name: "d"}}},
		{"DELETE", "/api/v1/namespaces/a/configmaps", nil,
			[]auditlog.Request{{Verb: "deletecollection", Resource: "configmaps", Namespace: "a"}}},
		{"GET", "/api/v1/nodes/n1/proxy/metrics", nil,
			[]auditlog.Request{{Verb: "get", Resource: "nodes", Subresource: "proxy", Name: "n1"}}},
		{"GET", "/api/v1/namespaces/a", nil,
			[]auditlog.Request{{Verb: "get", Resource: "namespaces", Namespace: "a", Name: "a"}}},
		{"GET", "/apis/apps/v1", nil, []auditlog.Request{{Verb: "get", Path: "/apis/apps/v1"}}},
		{"GET", "/metrics", nil, []auditlog.Request{{Verb: "get", Path: "/metrics"}}},
		{"GET", "/api/v1/namespaces/a/pods", http.Header{
			"Impersonate-User": {"system:serviceaccount:ci:robot"}, "Impersonate-Group": {"g1", "g2"},
			"Impersonate-Uid": {"u-1"}, "Impersonate-Extra-Scopes%2Fx": {"view"}},
			[]auditlog.Request{
				{Verb: "impersonate", Resource: "serviceaccounts", Namespace: "ci", Name: "robot"},
				{Verb: "impersonate", Resource: "groups", Name: "g1"},
				{Verb: "impersonate", Resource: "groups", Name: "g2"},
				{Verb: "impersonate", APIGroup: "authentication.k8s.io", Resource: "uids", Name: "u-1"},
				{Verb: "impersonate", APIGroup: "authentication.k8s.io", Resource: "userextras",
					Subresource: "scopes/x", Name: "view"},
				{Verb: "list", Resource: "pods", Namespace: "a"},
			}},
		{"GET", "/api/v1/pods", http.Header{"Impersonate-User": {"bob"}},
			[]auditlog.Request{{Verb: "impersonate", Resource: "users", Name: "bob"}, {Verb: "list", Resource: "pods"}}},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.url, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, tt.url, nil)
			for k, v := range tt.header {
				r.Header[k] = v
			}
			assert.Equal(t, tt.want, Of(r))
		})
	}
}
