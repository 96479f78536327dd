package inspect

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbaceval"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/resource"
)

// served is a discovery answer as kube-apiserver gives it (names, kinds,
// short names), with a CRD whose short name collides with nothing.
// The Priority fields are discovery's order: the core group, then the
// built-in groups, then the CRDs (a.io's hostile names among them).
var served = []resource.Resource{
	{Version: "v1", Name: "pods", Namespaced: true, Kind: "Pod", SingularName: "pod", ShortNames: []string{"po"}},
	{Version: "v1", Name: "pods/log", Namespaced: true, Kind: "Pod"},
	{Version: "v1", Name: "pods/exec", Namespaced: true, Kind: "PodExecOptions"},
	{Version: "v1", Name: "configmaps", Namespaced: true, Kind: "ConfigMap", SingularName: "configmap", ShortNames: []string{"cm"}},
	{Version: "v1", Name: "events", Namespaced: true, Kind: "Event", SingularName: "event", ShortNames: []string{"ev"}},
	{Group: "events.k8s.io", Version: "v1", Name: "events", Namespaced: true, Kind: "Event", SingularName: "event", ShortNames: []string{"ev"}},
	{Group: "apps", Version: "v1", Name: "deployments", Namespaced: true, Kind: "Deployment", SingularName: "deployment", ShortNames: []string{"deploy"}},
	{Group: "apps", Version: "v1", Name: "deployments/scale", Namespaced: true, Kind: "Scale"},
	{Group: "example.com", Version: "v1alpha1", Name: "widgets", Namespaced: true, Kind: "Widget", SingularName: "widget", ShortNames: []string{"wg"}},
	// A CRD named to take built-ins' names: a plural, a short name, a kind.
	{Group: "a.io", Version: "v1", Name: "deployments", Namespaced: true, Kind: "Deployment", SingularName: "deployment", ShortNames: []string{"deploy"}},
	{Group: "a.io", Version: "v1", Name: "aaas", Namespaced: true, Kind: "ConfigMap", SingularName: "aaa", ShortNames: []string{"cm", "po"}},
}

func init() {
	for i := range served {
		served[i].Priority = i
	}
}

func TestResolveTargetNames(t *testing.T) {
	for _, tt := range []struct {
		resource, wantResource, wantGroup, wantSub, wantErr string
	}{
		{resource: "pods", wantResource: "pods"},
		{resource: "po", wantResource: "pods"},
		{resource: "pod", wantResource: "pods"},
		{resource: "Pod", wantResource: "pods"},
		{resource: "pods.v1", wantErr: `the server does not serve a resource "pods.v1"`}, // kubectl: the group "v1"
		{resource: "po/log", wantResource: "pods", wantSub: "log"},
		{resource: "pods/exec", wantResource: "pods", wantSub: "exec"},
		{resource: "deploy", wantResource: "deployments", wantGroup: "apps"},
		{resource: "deployments.apps", wantResource: "deployments", wantGroup: "apps"},
		{resource: "deployments.v1.apps", wantResource: "deployments", wantGroup: "apps"},
		{resource: "deployment.apps/scale", wantResource: "deployments", wantGroup: "apps", wantSub: "scale"},
		{resource: "ev", wantResource: "events", wantGroup: ""}, // the core group first, as kubectl
		{resource: "events.events.k8s.io", wantResource: "events", wantGroup: "events.k8s.io"},
		{resource: "wg", wantResource: "widgets", wantGroup: "example.com"},
		{resource: "widgets.v1alpha1.example.com", wantResource: "widgets", wantGroup: "example.com"},
		{resource: "podz", wantErr: `the server does not serve a resource "podz" (did you mean "pods"?)`},
		{resource: "deploymets", wantErr: `(did you mean "deployments.apps"?)`},
		{resource: "*", wantResource: "*"},
		{resource: "users", wantResource: "users"},
		{resource: "userextras.authentication.k8s.io/scopes", wantResource: "userextras", wantGroup: "authentication.k8s.io", wantSub: "scopes"},
		// Constrained impersonation's resources (KEP-5284): served by no API.
		{resource: "users.authentication.k8s.io", wantResource: "users", wantGroup: "authentication.k8s.io"},
		{resource: "serviceaccounts.authentication.k8s.io", wantResource: "serviceaccounts", wantGroup: "authentication.k8s.io"},
		{resource: "nodes.authentication.k8s.io", wantResource: "nodes", wantGroup: "authentication.k8s.io"},
		{resource: "groups.authentication.k8s.io", wantResource: "groups", wantGroup: "authentication.k8s.io"},
		{resource: "frobnicators", wantErr: `the server does not serve a resource "frobnicators": see kubectl api-resources`},
		{resource: "deployments.v2.apps", wantErr: "does not serve"},
		{resource: "pods/attach", wantResource: "pods", wantSub: "attach"}, // asked as typed, as kubectl's --subresource
		{resource: "deployments.a.io", wantResource: "deployments", wantGroup: "a.io"},
		{resource: "deployments", wantResource: "deployments", wantGroup: "apps"}, // not the CRD's: discovery's priority
		{resource: "cm", wantResource: "configmaps"},                              // nor its short names
		{resource: "po", wantResource: "pods"},
		{resource: "configmap", wantResource: "configmaps"}, // the CRD's kind is no name of it
		{resource: "aaa", wantResource: "aaas", wantGroup: "a.io"},
	} {
		t.Run(tt.resource, func(t *testing.T) {
			got, err := resolveTarget(served, rbaceval.ParseTarget("get", tt.resource, "", "ns"))
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, rbaceval.Target{Verb: "get", Resource: tt.wantResource, Group: tt.wantGroup, Subresource: tt.wantSub, Namespace: "ns"}, got)
		})
	}
	url := rbaceval.ParseTarget("get", "/metrics", "", "")
	got, err := resolveTarget(served, url)
	require.NoError(t, err)
	assert.Equal(t, url, got, "non-resource URLs stay as they are")
}
