package kubeapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/environ"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/safefile"
)

// Discovery as kubectl does it: aggregated discovery (apidiscovery.k8s.io
// v2: /api and /apis answer every group's resources, 2 requests), the
// per-group-version documents only from a server without it, and kubectl's
// disk cache, in its directory and layout, so that kubectl and this plugin
// warm each other's cache (client-go discovery/cached/disk, cli-runtime's
// ConfigFlags.toDiscoveryClient, v0.37).

// DiscoveryTTL is how long a cached document is used: kubectl's.
const DiscoveryTTL = 6 * time.Hour

// acceptAggregated asks for aggregated discovery, as client-go does, with
// the plain documents as the fallback.
const acceptAggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"

// DiscoveryCacheDir is the discovery cache directory for host, under
// $KUBECACHEDIR or ~/.kube/cache/discovery ("" when there is no home).
//
// kubectl names a server's directory after its URL without "https://" or
// "http://", every character but letters, digits, "_", "/", ".", "(" and
// ")" replaced by "_" (cli-runtime's computeDiscoverCacheDir). That name
// is shared by many servers: "http://h:6443" and "https://h:6443", or
// "https://127.0.0.1_6443" (reached through a proxy-url) and
// "https://127.0.0.1:6443", and a path ("https://h:6443/apps") names a
// directory inside another server's. The plugin shares kubectl's directory
// (each warms the other's cache) only when kubectl's name maps back to
// this URL alone (sharesKubectlDir); any other host gets a directory of
// its own, its name with "/" as "_" and "-" and a digest of the whole URL
// after it ("h_6443_apps-1f0c…"): kubectl's names never contain "-", so it
// is no server's kubectl directory nor inside one.
func DiscoveryCacheDir(getenv func(string) string, host string) string {
	cache := getenv("KUBECACHEDIR")
	if cache == "" {
		home, err := environ.HomeDir(getenv)
		if err != nil || home == "" {
			return ""
		}
		cache = filepath.Join(home, ".kube", "cache")
	}
	h := strings.Replace(strings.Replace(host, "https://", "", 1), "http://", "", 1)
	safe := []rune(h)
	for i, r := range safe {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_/.()", r)) {
			safe[i] = '_'
		}
	}
	name := strings.TrimSuffix(string(safe), "/")
	if !sharesKubectlDir(host) {
		sum := sha256.Sum256([]byte(host))
		name = strings.ReplaceAll(string(safe), "/", "_") + "-" + hex.EncodeToString(sum[:8])
	}
	return filepath.Join(cache, "discovery", name)
}

// kubectlDirURL is a URL whose kubectl directory name maps back to it
// alone: https, a host of letters, digits, "." and "-" (no "_", no IPv6),
// a port, at most a trailing "/". kubectl's name turns "-" and the port's
// ":" into "_": with a port, the name's last "_" is the port's and every
// other one a "-"; without one, no "-" may be in the host (a name's "_"
// would then be a "-" or a port's ":").
var kubectlDirURL = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(
		`^https://([A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?:[0-9]{1,5}|[A-Za-z0-9](?:[A-Za-z0-9.]*[A-Za-z0-9])?)/?$`)
})

// sharesKubectlDir says host may use kubectl's own discovery directory:
// no other URL names it (kubectlDirURL).
func sharesKubectlDir(host string) bool { return kubectlDirURL().MatchString(host) }

// Discovered is what the server serves: its groups (the core group "" first,
// as client-go lists it) and each group version's resources.
type Discovered struct {
	Groups    metav1.APIGroupList
	Resources map[string]*metav1.APIResourceList // by group version ("v1", "apps/v1")
	// Failed are the group versions that could not be read (an aggregated
	// API server down, a stale aggregated document), with why.
	Failed map[string]string
	// FromCache is true when nothing was asked of the server.
	FromCache bool
}

// Preferred are the resource lists of each group's preferred version, in
// the groups' order; a list that could not be read is left out.
func (d *Discovered) Preferred() []*metav1.APIResourceList {
	var out []*metav1.APIResourceList
	for _, g := range d.Groups.Groups {
		if rl, ok := d.Resources[g.PreferredVersion.GroupVersion]; ok {
			out = append(out, rl)
		}
	}
	return out
}

// ServerResources reads the server's groups and resources: from kubectl's disk
// cache in dir when every document there is younger than DiscoveryTTL
// (unless fresh), else from the server (aggregated discovery: 2 requests;
// without it, 2 plus one per group version), writing them back to dir.
// dir "" caches nothing.
func (c *Client) ServerResources(ctx context.Context, dir string, fresh bool) (*Discovered, error) {
	if dir != "" && !fresh {
		if d, ok := readDiscoveryCache(dir, time.Now()); ok {
			return d, nil
		}
	}
	d, err := c.discoverLive(ctx)
	if err != nil {
		var refused *refusedError
		if errors.As(err, &refused) {
			return nil,
				fmt.Errorf("refusing the discovery answer of the API server %s: %w; nothing was cached", c.host,
					refused.err)
		}
		return nil, err
	}
	if dir != "" {
		writeDiscoveryCache(dir, d) // a cache that cannot be written costs the next run requests only
	}
	return d, nil
}

// discoverLive asks the server: /api and /apis, aggregated when it can.
func (c *Client) discoverLive(ctx context.Context) (*Discovered, error) {
	d := &Discovered{Resources: map[string]*metav1.APIResourceList{}, Failed: map[string]string{}}
	// /apis is asked while /api is (one round trip for both, as with
	// kubectl's parallel group fetches).
	type doc struct {
		body       []byte
		aggregated bool
		err        error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // /apis is not waited for when /api fails
	apisDoc := make(chan doc, 1)
	go func() {
		body, aggregated, err := c.discoveryDoc(ctx, "/apis")
		apisDoc <- doc{body, aggregated, err}
	}()
	core, aggregated, err := c.discoveryDoc(ctx, "/api")
	if err != nil {
		return nil, fmt.Errorf("discovering /api: %w", err)
	}
	if err := d.addCore(core, aggregated); err != nil {
		return nil, err
	}
	got := <-apisDoc
	if got.err != nil {
		return nil, fmt.Errorf("discovering /apis: %w", got.err)
	}
	if err := d.addGroups(got.body, got.aggregated); err != nil {
		return nil, err
	}
	if err := c.addPlain(ctx, d); err != nil {
		return nil, err
	}
	return d, nil
}

// addCore adds /api's answer: aggregated, or the plain list of versions.
func (d *Discovered) addCore(b []byte, aggregated bool) error {
	if aggregated {
		if err := d.addAggregated(b); err != nil {
			return fmt.Errorf("discovering /api: %w", err)
		}
		return nil
	}
	var versions metav1.APIVersions
	if err := json.Unmarshal(b, &versions); err != nil {
		return fmt.Errorf("decoding /api: %w", err)
	}
	if len(versions.Versions) == 0 {
		return nil
	}
	g := metav1.APIGroup{}
	for _, v := range versions.Versions {
		if err := checkVersion(v); err != nil {
			return &refusedError{err}
		}
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: v, Version: v})
	}
	g.PreferredVersion = g.Versions[0]
	d.Groups.Groups = append(d.Groups.Groups, g)
	return nil
}

// addGroups adds /apis's answer: aggregated, or the plain group list.
func (d *Discovered) addGroups(b []byte, aggregated bool) error {
	if aggregated {
		if err := d.addAggregated(b); err != nil {
			return fmt.Errorf("discovering /apis: %w", err)
		}
		return nil
	}
	var groups metav1.APIGroupList
	if err := json.Unmarshal(b, &groups); err != nil {
		return fmt.Errorf("decoding /apis: %w", err)
	}
	for _, g := range groups.Groups {
		if err := checkGroupList(g); err != nil {
			return &refusedError{err}
		}
	}
	d.Groups.Groups = append(d.Groups.Groups, groups.Groups...)
	return nil
}

// addPlain asks, without aggregated discovery (or for what it left out),
// the preferred versions' documents, one request each.
func (c *Client) addPlain(ctx context.Context, d *Discovered) error {
	for _, g := range d.Groups.Groups {
		gv := g.PreferredVersion.GroupVersion
		if _, ok := d.Resources[gv]; ok || d.Failed[gv] != "" {
			continue
		}
		path := "/apis/" + gv
		if g.Name == "" {
			path = "/api/" + gv
		}
		var rl metav1.APIResourceList
		if err := c.Get(ctx, path, &rl); err != nil {
			if g.Name == "" || ctx.Err() != nil {
				return fmt.Errorf("discovering %s: %w", path, err)
			}
			d.Failed[gv] = err.Error()
			continue
		}
		if err := checkResourceList(gv, &rl); err != nil {
			return &refusedError{err}
		}
		rl.GroupVersion = gv
		d.Resources[gv] = &rl
	}
	return nil
}

// refusedError is an answer that fails the checks of validate.go.
type refusedError struct{ err error }

func (e *refusedError) Error() string { return e.err.Error() }

// checkGroupList checks a plain /apis group: its name, and versions that
// are its own.
func checkGroupList(g metav1.APIGroup) error {
	if err := checkGroup(g.Name); err != nil {
		return err
	}
	for _, v := range append(g.Versions, g.PreferredVersion) {
		want := v.Version
		if g.Name != "" {
			want = g.Name + "/" + v.Version
		}
		if err := checkVersion(v.Version); err != nil {
			return err
		}
		if v.GroupVersion != want {
			return fmt.Errorf("group version %q is not %q's version %q", v.GroupVersion, g.Name, v.Version)
		}
	}
	return nil
}

// discoveryDoc GETs a discovery root asking for the aggregated form and
// says whether the server answered with it.
func (c *Client) discoveryDoc(ctx context.Context, path string) ([]byte, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.host+path, nil)
	if err != nil {
		return nil, false, err
	}
	req.Header.Set("Accept", acceptAggregated)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	b, err := c.readAnswer(resp, path, MaxGet)
	if err != nil {
		return nil, false, err
	}
	if err := answerError(resp.StatusCode, path, b); err != nil {
		return nil, false, err
	}
	if _, err := c.charge(path, b, answer{kept: true}); err != nil {
		return nil, false, err
	}
	_, params, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return b, params["g"] == "apidiscovery.k8s.io" && params["as"] == "APIGroupDiscoveryList", nil
}

// addAggregated adds an APIGroupDiscoveryList's groups and resources as
// client-go converts them (discovery/aggregated_discovery.go
// SplitGroupsAndResources, v0.37): a stale version is a failed one and
// left out, the preferred version is the first one left, a resource
// without a kind is left out (its subresources kept), a subresource takes
// its parent's singular name and scope. A document that cannot be read is
// an error, as in client-go.
func (d *Discovered) addAggregated(b []byte) error {
	var list apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("decoding the aggregated discovery document: %w", err)
	}
	for _, item := range list.Items {
		if err := checkGroup(item.Name); err != nil {
			return &refusedError{err}
		}
		group := metav1.APIGroup{Name: item.Name}
		for _, v := range item.Versions {
			if err := checkVersion(v.Version); err != nil {
				return &refusedError{err}
			}
			gv := v.Version
			if item.Name != "" {
				gv = item.Name + "/" + v.Version
			}
			if v.Freshness == apidiscoveryv2.DiscoveryFreshnessStale {
				d.Failed[gv] = "its aggregated discovery document is stale"
				continue
			}
			version := metav1.GroupVersionForDiscovery{GroupVersion: gv, Version: v.Version}
			group.Versions = append(group.Versions, version)
			if group.PreferredVersion == (metav1.GroupVersionForDiscovery{}) {
				group.PreferredVersion = version
			}
			rl := &metav1.APIResourceList{GroupVersion: gv}
			for _, r := range v.Resources {
				parent := metav1.APIResource{Name: r.Resource, SingularName: r.SingularResource,
					Namespaced: r.Scope == apidiscoveryv2.ScopeNamespace,
					Verbs:      r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories}
				if k := r.ResponseKind; k != nil && *k != (metav1.GroupVersionKind{}) {
					parent.Group, parent.Version, parent.Kind = k.Group, k.Version, k.Kind
					rl.APIResources = append(rl.APIResources, parent)
				}
				for _, sr := range r.Subresources {
					k := sr.ResponseKind
					if k == nil || *k == (metav1.GroupVersionKind{}) {
						continue
					}
					rl.APIResources = append(rl.APIResources,
						metav1.APIResource{Name: parent.Name + "/" + sr.Subresource, SingularName: parent.SingularName,
							Namespaced: parent.Namespaced, Group: k.Group, Version: k.Version, Kind: k.Kind,
							Verbs: sr.Verbs})
				}
			}
			if err := checkResourceList(gv, rl); err != nil {
				return &refusedError{err}
			}
			d.Resources[gv] = rl
		}
		d.Groups.Groups = append(d.Groups.Groups, group)
	}
	return nil
}

// The cache's files, as client-go's CachedDiscoveryClient writes them:
// servergroups.json (an APIGroupList) and GROUP/VERSION/serverresources.json
// (an APIResourceList; "v1/serverresources.json" for the core group), each
// young enough by its modification time.
const (
	groupsFile    = "servergroups.json"
	resourcesFile = "serverresources.json"
	// maxCacheFile bounds one cached document.
	maxCacheFile = 16 << 20
)

// readDiscoveryCache reads the cache in dir when all of it is young, the
// user's own and valid as a live answer must be (validate.go): a cache that
// fails is a miss, and the live answer replaces it.
func readDiscoveryCache(dir string, now time.Time) (*Discovered, bool) {
	if !trustedDir(filepath.Dir(dir)) || !trustedDir(dir) {
		return nil, false
	}
	var groups metav1.APIGroupList
	if !readCacheFile(filepath.Join(dir, groupsFile), now, &groups) || len(groups.Groups) == 0 {
		return nil, false
	}
	d := &Discovered{Groups: groups, Resources: map[string]*metav1.APIResourceList{}, Failed: map[string]string{},
		FromCache: true}
	for _, g := range groups.Groups {
		gv := g.PreferredVersion.GroupVersion
		if checkGroupList(g) != nil {
			return nil, false
		}
		var rl metav1.APIResourceList
		if !readCacheFile(filepath.Join(dir, filepath.FromSlash(gv), resourcesFile), now, &rl) ||
			checkResourceList(gv, &rl) != nil {
			return nil, false
		}
		rl.GroupVersion = gv
		d.Resources[gv] = &rl
	}
	return d, true
}

// readCacheFile reads one cached document into out when it is the
// user's own, writable by no one else, a regular file (never a FIFO) and
// young enough: a cache in a shared $KUBECACHEDIR that another user could
// write is not trusted (it could hide resources from a matrix).
func readCacheFile(path string, now time.Time, out any) bool {
	b, _, err := safefile.ReadRegular("discovery cache file", path, maxCacheFile,
		safefile.ReadOptions{NoFollow: true, Rule: safefile.Cache, Check: func(fi os.FileInfo) error {
			if now.After(fi.ModTime().Add(DiscoveryTTL)) {
				return errors.New("not used")
			}
			return nil
		}})
	return err == nil && json.Unmarshal(b, out) == nil
}

// trustedDir tells whether dir is a directory of the user's own that no one
// else may write, and not a symlink: in a shared $KUBECACHEDIR another
// user could otherwise point a server's directory (or discovery/ itself)
// at another server's.
func trustedDir(dir string) bool {
	return safefile.CheckDir("discovery cache directory", dir, false, safefile.Private) == nil
}

// writeDiscoveryCache writes d in client-go's layout (directories 0750,
// files 0660, renamed into place, not synced: as kubectl), every version's
// resources (empty lists too, so that a version without resources is no
// miss), so that kubectl finds all it reads. Every write goes through an
// os.Root at dir: d's names were checked (validate.go), and no name or
// symlink can take a write out of the server's own directory.
func writeDiscoveryCache(dir string, d *Discovered) {
	if err := os.MkdirAll(dir, 0o750); err != nil || !trustedDir(filepath.Dir(dir)) || !trustedDir(dir) {
		return
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return
	}
	defer func() { _ = root.Close() }()
	groups := d.Groups
	groups.Kind, groups.APIVersion = "APIGroupList", "v1"
	for gv, rl := range d.Resources {
		out := *rl
		out.Kind, out.APIVersion = "APIResourceList", "v1"
		if err := writeCacheFile(root, path.Join(gv, resourcesFile), &out); err != nil {
			return
		}
	}
	if len(d.Failed) > 0 {
		return // an incomplete picture is not cached: the next run asks again
	}
	_ = writeCacheFile(root, groupsFile, &groups)
}

func writeCacheFile(root *os.Root, name string, v any) error {
	if err := root.MkdirAll(path.Dir(name), 0o750); err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return safefile.WriteIn(root, filepath.FromSlash(name), b, safefile.Options{Mode: 0o660})
}
