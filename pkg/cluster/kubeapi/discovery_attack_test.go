package kubeapi

import (
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/hostileapi"
)

// cacheWorld is a $KUBECACHEDIR with another cluster's discovery cache in
// it (the canary an attacker wants to overwrite) and a snapshot of every
// file, to tell what a run changed.
type cacheWorld struct {
	base, legit string
}

func newCacheWorld(t *testing.T) *cacheWorld {
	base := t.TempDir()
	w := &cacheWorld{base: base, legit: filepath.Join(base, "discovery", "legit.example.com_6443")}
	require.NoError(t, os.MkdirAll(filepath.Join(w.legit, "apps", "v1"), 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(w.legit, "servergroups.json"), []byte(`{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`), 0o660))
	require.NoError(t, os.WriteFile(filepath.Join(w.legit, "apps", "v1", "serverresources.json"), []byte(`{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"apps/v1","resources":[]}`), 0o660))
	return w
}

func (w *cacheWorld) getenv(k string) string {
	if k == "KUBECACHEDIR" {
		return w.base
	}
	return ""
}

// files are every file and directory under base outside skip, with
// their contents.
func (w *cacheWorld) files(t *testing.T, skip string) map[string]string {
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(w.base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if skip != "" && (p == skip || strings.HasPrefix(p, skip+string(filepath.Separator))) {
			return nil
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			out[p] = string(b)
		} else {
			out[p] = d.Type().String()
		}
		return nil
	}))
	return out
}

func group(name, version string) apidiscoveryv2.APIGroupDiscovery {
	// The resource's own kind names a plain group version: the group's
	// and the version's checks alone must refuse a bad name (issue 46:
	// a fixture that repeated it there let a later check mask a missing
	// one).
	gv := metav1.GroupVersionKind{Group: "x.example", Version: "v1"}
	return hostileapi.Group(name, version, hostileapi.Resource("widgets", "Widget", true, gv))
}

// TestDiscoveryAttacks is the hostile API server's table for discovery
// (docs/security.md, "The API server"): no answer writes outside the
// server's own cache directory or changes another cluster's cache, and an
// answer that names what kubectl would refuse is refused in one line that
// names the server, with nothing written.
func TestDiscoveryAttacks(t *testing.T) {
	for _, tt := range []struct {
		name    string
		groups  []apidiscoveryv2.APIGroupDiscovery
		plant   func(t *testing.T, w *cacheWorld, dir string) // before the run
		wantErr string                                        // "" : served and cached
	}{
		{name: "control: a plain server", groups: hostileapi.DefaultGroups()},
		{name: "a group climbs into another cluster's cache", groups: []apidiscoveryv2.APIGroupDiscovery{group("../legit.example.com_6443/apps", "v1")},
			wantErr: `group "../legit.example.com_6443/apps"`},
		{name: "a version climbs into another cluster's cache", groups: []apidiscoveryv2.APIGroupDiscovery{group("x.example", "../../legit.example.com_6443/apps/v1")},
			wantErr: `version "../../legit.example.com_6443/apps/v1"`},
		{name: "a group climbs out of the cache", groups: []apidiscoveryv2.APIGroupDiscovery{group("../../escaped", "v1")},
			wantErr: `group "../../escaped"`},
		{name: "an absolute group", groups: []apidiscoveryv2.APIGroupDiscovery{group("/tmp/x", "v1")}, wantErr: `group "/tmp/x"`},
		{name: "a resource name with a path", groups: []apidiscoveryv2.APIGroupDiscovery{hostileapi.Group("x.example", "v1",
			hostileapi.Resource("../../secrets", "Secret", true, metav1.GroupVersionKind{Group: "x.example", Version: "v1"}))}, wantErr: `resource "../../secrets"`},
		{name: "a kind with escapes", groups: []apidiscoveryv2.APIGroupDiscovery{hostileapi.Group("x.example", "v1",
			hostileapi.Resource("widgets", "Widget\x1b[2J", true, metav1.GroupVersionKind{Group: "x.example", Version: "v1"}))}, wantErr: `kind "Widget\x1b[2J"`},
		{name: "a symlink in the server's directory points into another cluster's cache", groups: hostileapi.DefaultGroups(),
			plant: func(t *testing.T, w *cacheWorld, dir string) {
				require.NoError(t, os.MkdirAll(dir, 0o750))
				require.NoError(t, os.Symlink(filepath.Join(w.legit, "apps"), filepath.Join(dir, "rbac.authorization.k8s.io")))
			}},
		{name: "a relative symlink in the server's directory points into another cluster's cache", groups: hostileapi.DefaultGroups(),
			plant: func(t *testing.T, w *cacheWorld, dir string) {
				require.NoError(t, os.MkdirAll(dir, 0o750))
				rel, err := filepath.Rel(dir, filepath.Join(w.legit, "apps"))
				require.NoError(t, err)
				require.NoError(t, os.Symlink(rel, filepath.Join(dir, "rbac.authorization.k8s.io")))
			}},
		{name: "the server's directory is a symlink to another cluster's", groups: hostileapi.DefaultGroups(),
			plant: func(t *testing.T, w *cacheWorld, dir string) {
				require.NoError(t, os.Symlink(w.legit, dir))
			}},
		{name: "the server's directory is writable by others", groups: hostileapi.DefaultGroups(),
			plant: func(t *testing.T, w *cacheWorld, dir string) {
				require.NoError(t, os.MkdirAll(dir, 0o750))
				require.NoError(t, os.Chmod(dir, 0o777))
				t.Cleanup(func() {
					entries, _ := os.ReadDir(dir)
					assert.Empty(t, entries, "nothing written into a directory others may write")
				})
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newCacheWorld(t)
			s := hostileapi.New()
			defer s.Close()
			s.SetGroups(tt.groups)
			dir := DiscoveryCacheDir(w.getenv, s.URL)
			if tt.plant != nil {
				tt.plant(t, w, dir)
			}
			before := w.files(t, dir)
			c, err := NewClient(&rest.Config{Host: s.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
			require.NoError(t, err)
			_, err = c.ServerResources(context.Background(), dir, false)
			assert.Equal(t, before, w.files(t, dir), "files outside the server's directory changed")
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.Contains(t, err.Error(), s.URL, "the refusal names the server")
			assert.NotContains(t, err.Error(), "\n")
			_, statErr := os.Stat(dir)
			assert.ErrorIs(t, statErr, fs.ErrNotExist, "nothing written for a refused answer")
		})
	}
}

// TestDiscoveryAttackLegacyGroupList: a server without aggregated
// discovery names a group version that climbs; it is refused before its
// document is asked for.
func TestDiscoveryAttackLegacyGroupList(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path)
		mu.Unlock()
		rw.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api":
			_ = json.NewEncoder(rw).Encode(metav1.APIVersions{Versions: []string{"v1"}})
		case "/apis":
			v := metav1.GroupVersionForDiscovery{GroupVersion: "../../legit.example.com_6443/apps/v1", Version: "v1"}
			_ = json.NewEncoder(rw).Encode(metav1.APIGroupList{Groups: []metav1.APIGroup{{Name: "x.example", Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v}}})
		default:
			_ = json.NewEncoder(rw).Encode(metav1.APIResourceList{})
		}
	}))
	defer srv.Close()
	w := newCacheWorld(t)
	dir := DiscoveryCacheDir(w.getenv, srv.URL)
	before := w.files(t, dir)
	c, err := NewClient(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	_, err = c.ServerResources(context.Background(), dir, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"../../legit.example.com_6443/apps/v1"`)
	assert.Equal(t, before, w.files(t, dir))
	mu.Lock()
	defer mu.Unlock()
	assert.NotContains(t, asked, "/apis/../../legit.example.com_6443/apps/v1")
}

// TestDiscoveryCacheDirDoesNotNest: a server URL's path cannot make its
// directory one inside another server's, nor climb; a plain host:port
// keeps kubectl's own directory (shared with kubectl).
func TestDiscoveryCacheDirDoesNotNest(t *testing.T) {
	env := func(k string) string { return map[string]string{"KUBECACHEDIR": "/c"}[k] }
	plain := DiscoveryCacheDir(env, "https://h:6443")
	assert.Equal(t, "/c/discovery/h_6443", plain, "kubectl's directory")
	for _, host := range []string{"https://h:6443/apps", "https://h:6443/apps/v1", "https://h:6443/..", "https://..", "https://.", "",
		"https://rancher.example.com/k8s/clusters/c-1", "https://evil.example.net/../h:6443", "https://evil/x/../../h:6443"} {
		dir := DiscoveryCacheDir(env, host)
		rel, err := filepath.Rel("/c/discovery", dir)
		require.NoError(t, err)
		assert.NotContains(t, rel, string(filepath.Separator), "%q: one element under discovery/", host)
		assert.NotContains(t, []string{".", "..", ""}, rel, host)
		assert.NotEqual(t, plain, dir, host)
	}
	assert.NotEqual(t, DiscoveryCacheDir(env, "https://h:6443/a_b"), DiscoveryCacheDir(env, "https://h:6443/a/b"), "two paths, two directories")
}
