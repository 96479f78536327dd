package kubeapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

// fakeAPIServer serves SelfSubjectReview at the given versions only and
// records the impersonation headers it receives.
func fakeAPIServer(t *testing.T, versions ...string) (*Client, *http.Header) {
	var seen http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Clone()
		for _, v := range versions {
			if r.URL.Path == "/apis/authentication.k8s.io/"+v+"/selfsubjectreviews" && r.Method == http.MethodPost {
				user := "alice"
				if as := r.Header.Get("Impersonate-User"); as != "" {
					user = as
				}
				_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "authentication.k8s.io/" + v, "kind": "SelfSubjectReview",
					"status": map[string]any{"userInfo": map[string]any{"username": user, "groups": r.Header.Values("Impersonate-Group")}}})
				return
			}
		}
		if r.URL.Path == "/apis/authentication.k8s.io/v1/selfsubjectreviews" && len(versions) == 1 && versions[0] == "forbidden" {
			w.WriteHeader(403)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"selfsubjectreviews.authentication.k8s.io is forbidden: User \"x\" cannot create","reason":"Forbidden","code":403}`))
			return
		}
		if r.URL.Path == "/version" {
			_, _ = w.Write([]byte(`{"major":"1","minor":"25","gitVersion":"v1.25.16"}`))
			return
		}
		w.WriteHeader(404)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(&rest.Config{Host: srv.URL, Impersonate: rest.ImpersonationConfig{UserName: "bob", Groups: []string{"g1", "g2"}}})
	require.NoError(t, err)
	return c, &seen
}

func TestWhoAmI(t *testing.T) {
	tests := []struct {
		name          string
		versions      []string
		wantVersion   string
		wantErrSubstr string
	}{
		{name: "v1", versions: []string{"v1", "v1beta1"}, wantVersion: "v1"},
		{name: "falls back to v1beta1", versions: []string{"v1beta1"}, wantVersion: "v1beta1"},
		{name: "falls back to v1alpha1", versions: []string{"v1alpha1"}, wantVersion: "v1alpha1"},
		{name: "not served: the version found and what is unavailable", wantErrSubstr: "the API server is Kubernetes v1.25.16 and does not serve SelfSubjectReview (1.28+, v1 from 1.30; supported releases are 1.35 to 1.37): whoami, groups and claims --compare are unavailable"},
		{name: "forbidden, as kubectl shows it", versions: []string{"forbidden"}, wantErrSubstr: "Error from server (Forbidden): selfsubjectreviews.authentication.k8s.io is forbidden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, seen := fakeAPIServer(t, tt.versions...)
			ui, v, err := c.WhoAmI(context.Background())
			if tt.wantErrSubstr != "" {
				require.ErrorContains(t, err, tt.wantErrSubstr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantVersion, v)
			assert.Equal(t, "bob", ui.Username, "impersonation headers reach the server")
			assert.Equal(t, []string{"g1", "g2"}, ui.Groups)
			assert.Equal(t, []string{"g1", "g2"}, (*seen).Values("Impersonate-Group"))
		})
	}
}
