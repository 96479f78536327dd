package kubeapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery/cached/disk"
	"k8s.io/client-go/rest"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testfs"
)

// discoveryServer serves /api and /apis as kube-apiserver does: aggregated
// (apidiscovery.k8s.io/v2) when the Accept header asks for it and
// aggregated is on, else the plain documents and one per group version.
type discoveryServer struct {
	*httptest.Server
	aggregated bool
	stale      bool
	requests   atomic.Int32
}

func newDiscoveryServer(t *testing.T, aggregated bool) *discoveryServer {
	s := &discoveryServer{aggregated: aggregated}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

var (
	coreResources = []apidiscoveryv2.APIResourceDiscovery{{Resource: "pods", SingularResource: "pod", Scope: apidiscoveryv2.ScopeNamespace, ShortNames: []string{"po"},
		ResponseKind: &metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Verbs: []string{"get", "list", "create"},
		Subresources: []apidiscoveryv2.APISubresourceDiscovery{{Subresource: "log", ResponseKind: &metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Verbs: []string{"get"}}}},
		{Resource: "namespaces", SingularResource: "namespace", Scope: apidiscoveryv2.ScopeCluster, ShortNames: []string{"ns"},
			ResponseKind: &metav1.GroupVersionKind{Version: "v1", Kind: "Namespace"}, Verbs: []string{"get", "list"}}}
	appsResources = []apidiscoveryv2.APIResourceDiscovery{{Resource: "deployments", SingularResource: "deployment", Scope: apidiscoveryv2.ScopeNamespace, ShortNames: []string{"deploy"},
		ResponseKind: &metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, Verbs: []string{"get", "list"}, Categories: []string{"all"}}}
)

// legacyList is what the plain group-version document lists for rs, as
// kube-apiserver (and client-go's conversion of the aggregated form) does.
func legacyList(gv string, rs []apidiscoveryv2.APIResourceDiscovery) metav1.APIResourceList {
	out := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv}
	for _, r := range rs {
		ns := r.Scope == apidiscoveryv2.ScopeNamespace
		out.APIResources = append(out.APIResources, metav1.APIResource{Name: r.Resource, SingularName: r.SingularResource, Namespaced: ns,
			Kind: r.ResponseKind.Kind, Verbs: r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories})
		for _, sr := range r.Subresources {
			out.APIResources = append(out.APIResources, metav1.APIResource{Name: r.Resource + "/" + sr.Subresource, Namespaced: ns, Kind: sr.ResponseKind.Kind, Verbs: sr.Verbs})
		}
	}
	return out
}

func (s *discoveryServer) serve(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	aggregated := s.aggregated && strings.Contains(r.Header.Get("Accept"), "g=apidiscovery.k8s.io;v=v2")
	write := func(ct string, v any) {
		w.Header().Set("Content-Type", ct)
		_ = json.NewEncoder(w).Encode(v)
	}
	const aggCT = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
	appsVersions := []apidiscoveryv2.APIVersionDiscovery{{Version: "v1", Resources: appsResources, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}}
	if s.stale {
		// A newer version whose aggregated API server is down, listed first.
		appsVersions = append([]apidiscoveryv2.APIVersionDiscovery{{Version: "v2", Resources: appsResources, Freshness: apidiscoveryv2.DiscoveryFreshnessStale}}, appsVersions...)
	}
	switch {
	case r.URL.Path == "/api" && aggregated:
		write(aggCT, apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"},
			Items: []apidiscoveryv2.APIGroupDiscovery{{Versions: []apidiscoveryv2.APIVersionDiscovery{{Version: "v1", Resources: coreResources, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}}}}})
	case r.URL.Path == "/apis" && aggregated:
		write(aggCT, apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"},
			Items: []apidiscoveryv2.APIGroupDiscovery{{ObjectMeta: metav1.ObjectMeta{Name: "apps"}, Versions: appsVersions}}})
	case r.URL.Path == "/api":
		write("application/json", metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
	case r.URL.Path == "/apis":
		v := metav1.GroupVersionForDiscovery{GroupVersion: "apps/v1", Version: "v1"}
		write("application/json", metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
			Groups: []metav1.APIGroup{{Name: "apps", Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v}}})
	case r.URL.Path == "/api/v1":
		write("application/json", legacyList("v1", coreResources))
	case r.URL.Path == "/apis/apps/v1":
		write("application/json", legacyList("apps/v1", appsResources))
	default:
		http.NotFound(w, r)
	}
}

func (s *discoveryServer) client(t *testing.T) *Client {
	c, err := NewClient(&rest.Config{Host: s.URL})
	require.NoError(t, err)
	return c
}

// names are "group/version resource" of every list, sorted.
func names(lists []*metav1.APIResourceList) []string {
	var out []string
	for _, l := range lists {
		for _, r := range l.APIResources {
			out = append(out, l.GroupVersion+" "+r.Name)
		}
	}
	sort.Strings(out)
	return out
}

var wantNames = []string{"apps/v1 deployments", "v1 namespaces", "v1 pods", "v1 pods/log"}

func TestDiscoveryRequestsAndCache(t *testing.T) {
	for _, tt := range []struct {
		name       string
		aggregated bool
		wantCold   int32
	}{
		{name: "aggregated discovery: 2 requests", aggregated: true, wantCold: 2},
		{name: "without it: 2 and one per group version", aggregated: false, wantCold: 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newDiscoveryServer(t, tt.aggregated)
			dir := filepath.Join(t.TempDir(), "discovery", "host")
			d, err := s.client(t).ServerResources(context.Background(), dir, false)
			require.NoError(t, err)
			assert.False(t, d.FromCache)
			assert.Equal(t, tt.wantCold, s.requests.Load())
			assert.Equal(t, wantNames, names(d.Preferred()))
			assert.Equal(t, "", d.Groups.Groups[0].Name, "the core group first")

			warm, err := s.client(t).ServerResources(context.Background(), dir, false)
			require.NoError(t, err)
			assert.True(t, warm.FromCache)
			assert.Equal(t, tt.wantCold, s.requests.Load(), "a warm run asks nothing")
			assert.Equal(t, wantNames, names(warm.Preferred()))
			pods := warm.Resources["v1"].APIResources[0]
			want := metav1.APIResource{Name: "pods", SingularName: "pod", Namespaced: true, Kind: "Pod", Verbs: []string{"get", "list", "create"}, ShortNames: []string{"po"}}
			if tt.aggregated {
				want.Version = "v1" // client-go's conversion names the kind's version
			}
			assert.Equal(t, want, pods)

			_, err = s.client(t).ServerResources(context.Background(), dir, true)
			require.NoError(t, err)
			assert.Equal(t, 2*tt.wantCold, s.requests.Load(), "fresh (after a miss) asks again")

			// Older than kubectl's TTL: asked again.
			old := time.Now().Add(-DiscoveryTTL - time.Minute)
			require.NoError(t, filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
				if err == nil {
					err = os.Chtimes(p, old, old)
				}
				return err
			}))
			again, err := s.client(t).ServerResources(context.Background(), dir, false)
			require.NoError(t, err)
			assert.False(t, again.FromCache)
			assert.Equal(t, 3*tt.wantCold, s.requests.Load())
		})
	}
}

// TestDiscoveryCacheIsKubectls: client-go's CachedDiscoveryClient (what
// kubectl uses, with kubectl's TTL) reads the cache this package wrote
// without a request, and this package reads the one client-go wrote.
func TestDiscoveryCacheIsKubectls(t *testing.T) {
	s := newDiscoveryServer(t, true)
	cfg := &rest.Config{Host: s.URL}

	ours := filepath.Join(t.TempDir(), "ours")
	_, err := s.client(t).ServerResources(context.Background(), ours, false)
	require.NoError(t, err)
	before := s.requests.Load()
	kubectl, err := disk.NewCachedDiscoveryClientForConfig(cfg, ours, filepath.Join(t.TempDir(), "http"), DiscoveryTTL)
	require.NoError(t, err)
	_, lists, err := kubectl.ServerGroupsAndResources()
	require.NoError(t, err)
	assert.Equal(t, before, s.requests.Load(), "kubectl's cached discovery found everything in our cache")
	assert.Equal(t, wantNames, names(lists))

	theirs := filepath.Join(t.TempDir(), "theirs")
	kubectl, err = disk.NewCachedDiscoveryClientForConfig(cfg, theirs, filepath.Join(t.TempDir(), "http"), DiscoveryTTL)
	require.NoError(t, err)
	_, _, err = kubectl.ServerGroupsAndResources()
	require.NoError(t, err)
	before = s.requests.Load()
	d, err := s.client(t).ServerResources(context.Background(), theirs, false)
	require.NoError(t, err)
	assert.True(t, d.FromCache)
	assert.Equal(t, before, s.requests.Load(), "we found everything in kubectl's cache")
	assert.Equal(t, wantNames, names(d.Preferred()))
}

// TestDiscoveryStaleVersion: a stale aggregated version (its aggregated
// API server down) is reported failed and left out, the group's next
// version preferred, as client-go does; the incomplete picture is not
// cached.
func TestDiscoveryStaleVersion(t *testing.T) {
	s := newDiscoveryServer(t, true)
	s.stale = true
	dir := t.TempDir()
	d, err := s.client(t).ServerResources(context.Background(), dir, false)
	require.NoError(t, err)
	assert.Contains(t, d.Failed, "apps/v2")
	assert.Equal(t, wantNames, names(d.Preferred()), "apps/v1 preferred")
	_, err = os.Stat(filepath.Join(dir, "servergroups.json"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestDiscoveryCacheOfOthers: a cache file another user could write is
// not read (a shared $KUBECACHEDIR could hide resources), nor a FIFO.
func TestDiscoveryCacheOfOthers(t *testing.T) {
	s := newDiscoveryServer(t, true)
	dir := t.TempDir()
	_, err := s.client(t).ServerResources(context.Background(), dir, false)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(filepath.Join(dir, "servergroups.json"), 0o666))
	before := s.requests.Load()
	d, err := s.client(t).ServerResources(context.Background(), dir, false)
	require.NoError(t, err)
	assert.False(t, d.FromCache, "a world-writable file is not used")
	assert.Equal(t, before+2, s.requests.Load())

	fifoDir := t.TempDir()
	testfs.Mkfifo(t, filepath.Join(fifoDir, "servergroups.json"))
	done := make(chan struct{})
	go func() {
		defer close(done)
		d, err = s.client(t).ServerResources(context.Background(), fifoDir, false)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("reading a FIFO in the cache blocked")
	}
	require.NoError(t, err)
	assert.False(t, d.FromCache)
}

// TestDiscoveryBrokenDocument: an aggregated document that cannot be read
// is an error, not an empty picture.
func TestDiscoveryBrokenDocument(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
		_, _ = w.Write([]byte(`{"items":[{"versions":`))
	}))
	defer srv.Close()
	c, err := NewClient(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	_, err = c.ServerResources(context.Background(), "", false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "discovering /api: decoding the aggregated discovery document")
}

// kubectlCacheChars is overlyCautiousIllegalFileCharacters (k8s.io/cli-runtime
// pkg/genericclioptions/config_flags.go, v0.37.2), which names kubectl's
// discovery cache directory: the oracle of DiscoveryCacheDir.
var kubectlCacheChars = regexp.MustCompile(`[^(\w/.)]`)

// TestDiscoveryCacheDir: the directory cli-runtime's
// computeDiscoverCacheDir names (kubectl's), under $KUBECACHEDIR, for every
// server whose kubectl name maps back to it alone; any other gets its own,
// never kubectl's name of another server (issue 46: "https://127.0.0.1_28446"
// through a proxy-url wrote into 127.0.0.1:28446's directory).
func TestDiscoveryCacheDir(t *testing.T) {
	env := func(k string) string { return map[string]string{"KUBECACHEDIR": "/c"}[k] }
	kubectlName := func(host string) string {
		schemeless := strings.Replace(strings.Replace(host, "https://", "", 1), "http://", "", 1)
		return kubectlCacheChars.ReplaceAllString(schemeless, "_")
	}
	kubectls := func(host string) string { return filepath.Join("/c", "discovery", kubectlName(host)) }
	ownPrefix := func(host string) string {
		return filepath.Join("/c", "discovery", strings.ReplaceAll(kubectlName(host), "/", "_")) + "-"
	}
	for _, host := range []string{"https://127.0.0.1:6443", "https://h:6443/", "https://my-cluster.example.com:6443",
		"https://api.example.com", "https://ABC.gr7.us-east-1.eks.amazonaws.com:443", "https://h"} {
		assert.Equal(t, kubectls(host), DiscoveryCacheDir(env, host), "%s shares kubectl's directory", host)
	}
	for _, host := range []string{"http://127.0.0.1:6443", "https://127.0.0.1_6443", "https://127.0.0.1-6443", "https://my_cluster.example.com:6443",
		"http://[::1]:8080", "https://[::1]:8080", "https://exämple.com", "https://a(b).example.com", "api.example.com:443",
		"https://us-east-1.example.com", "https://h:6443//", "https://u@h:6443", "https://h:6443?x", "https://-h:6443", "https://h.:6443x"} {
		dir := DiscoveryCacheDir(env, host)
		assert.NotEqual(t, kubectls(host), dir, "%s: kubectl's name is another server's too", host)
		assert.Regexp(t, `-[0-9a-f]{16}$`, dir, host)
		// Its name is kubectl's, "/" as "_", then the digest.
		assert.True(t, strings.HasPrefix(dir, ownPrefix(host)), "%s: %s", host, dir)
	}
	// Every character class's edges, in a name of its own and in kubectl's.
	for _, host := range []string{"https://azAZ09.example:6443", "https://a`{@[/:b_c(d)e.f:1/g"} {
		dir := DiscoveryCacheDir(env, host)
		assert.True(t, dir == kubectls(host) || strings.HasPrefix(dir, ownPrefix(host)), "%s: %s", host, dir)
	}
	assert.Equal(t, "/c/discovery/127.0.0.1_6443", DiscoveryCacheDir(env, "https://127.0.0.1:6443"))
	assert.Equal(t, "/c/discovery/rancher.example.com_k8s_clusters_c_1-80962251d67c6bd7", DiscoveryCacheDir(env, "https://rancher.example.com/k8s/clusters/c-1"),
		"a path: not kubectl's nested directory")
}

// FuzzDiscoveryCacheDirsDistinct: two server URLs that are not the same
// server as kubeconfigs write them (credspec.SameServer: a trailing "/",
// the letters' case) never share a discovery directory (hack/fuzz.sh runs
// it beyond the seeds).
func FuzzDiscoveryCacheDirsDistinct(f *testing.F) {
	for _, p := range [][2]string{
		{"https://127.0.0.1:28446", "https://127.0.0.1_28446"}, {"https://h:6443", "http://h:6443"},
		{"https://a-b:6443", "https://a_b:6443"}, {"https://a-b-6443", "https://a-b:6443"}, {"https://a-b:6443", "https://a:b:6443"},
		{"https://h:6443/apps", "https://h:6443"}, {"https://h:1", "https://h:1/"}, {"https://h_1", "https://h:1"},
		{"https://exämple.com", "https://ex_mple.com"}, {"https://h.", "https://h"},
	} {
		f.Add(p[0], p[1])
	}
	env := func(k string) string { return map[string]string{"KUBECACHEDIR": "/c"}[k] }
	f.Fuzz(func(t *testing.T, a, b string) {
		if strings.EqualFold(strings.TrimSuffix(a, "/"), strings.TrimSuffix(b, "/")) {
			return
		}
		if da, db := DiscoveryCacheDir(env, a), DiscoveryCacheDir(env, b); da == db {
			t.Fatalf("%q and %q share %s", a, b, da)
		}
	})
}
