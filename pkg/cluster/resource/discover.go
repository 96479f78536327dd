package resource

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Discover lists the resources the API server serves (preferred versions),
// without subresources unless asked for: as kubectl, from its disk cache
// when fresh, else by aggregated discovery (kubeapi.ServerResources).
func (c *Client) Discover(ctx context.Context, subresources bool) ([]Resource, error) {
	d, err := c.ServerResources(ctx, c.DiscoveryCache, c.invalidated)
	if err != nil {
		return nil, err
	}
	c.fromCache, c.invalidated = d.FromCache, false
	var out []Resource
	for _, rl := range d.Preferred() {
		group, version, found := strings.Cut(rl.GroupVersion, "/")
		if !found {
			group, version = "", rl.GroupVersion
		}
		for _, r := range rl.APIResources {
			if strings.Contains(r.Name, "/") && !subresources {
				continue
			}
			out = append(out,
				Resource{Group: group, Version: version, Name: r.Name, Namespaced: r.Namespaced, Verbs: r.Verbs,
					Kind: r.Kind, SingularName: r.SingularName, ShortNames: r.ShortNames, Priority: len(out)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	if len(d.Failed) > 0 {
		var failed []string
		for gv, why := range d.Failed {
			failed = append(failed, fmt.Sprintf("%s (%s)", gv, why))
		}
		sort.Strings(failed)
		return out, &PartialDiscoveryError{Failed: failed}
	}
	return out, nil
}

// Invalidate makes the next Discover ask the server, as kubectl's cached
// discovery does when a resource is not found: it says whether the last
// answer came from the cache (if not, asking again would change nothing).
func (c *Client) Invalidate() bool {
	c.invalidated = true
	return c.fromCache
}

// PartialDiscoveryError says which API groups could not be discovered; the
// resources returned with it are the others' (a warning, not a failure).
type PartialDiscoveryError struct{ Failed []string }

func (e *PartialDiscoveryError) Error() string {
	return "could not discover " + strings.Join(e.Failed, ", ") + ": their resources are left out"
}

// Namespaces lists the namespaces the caller may list.
func (c *Client) Namespaces(ctx context.Context) ([]string, error) {
	ns, err := c.NamespacesWith(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("for -A: %w", err)
	}
	return ns, nil
}

// Discoverer is a server's discovery, cached as kubectl caches it (a
// *Client): Discover answers from kubectl's disk cache until Invalidate,
// which says whether the last answer came from it.
type Discoverer interface {
	Discover(ctx context.Context, subresources bool) ([]Resource, error)
	Invalidate() bool
}

// DiscoveryError is a discovery that failed outright (a partial one is a
// warning: Served).
type DiscoveryError struct{ Err error }

func (e *DiscoveryError) Error() string { return e.Err.Error() }
func (e *DiscoveryError) Unwrap() error { return e.Err }

// Served is what d serves, a partial failure (one API group down) turned
// into a warning on warn, as kubectl's "couldn't get resource list"; any
// other failure is a *DiscoveryError.
func Served(ctx context.Context, d Discoverer, subresources bool, warn func(string)) ([]Resource, error) {
	all, err := d.Discover(ctx, subresources)
	var partial *PartialDiscoveryError
	switch {
	case errors.As(err, &partial):
		warn(partial.Error())
		return all, nil
	case err != nil:
		return nil, &DiscoveryError{Err: err}
	}
	return all, nil
}

// Resolve runs resolve on what d serves (Served) and, when it fails on an
// answer from kubectl's cache, once more on the server's: a resource
// created since the cache was written (a CRD) is found, as kubectl's
// cached discovery finds it. It is discovery's one retry; every command
// resolves what it was given through it, in Complete.
func Resolve[T any](ctx context.Context, d Discoverer, subresources bool, warn func(string),
	resolve func([]Resource) (T, error)) (T, error) {
	all, err := Served(ctx, d, subresources, warn)
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := resolve(all)
	if err != nil && d.Invalidate() {
		if again, derr := Served(ctx, d, subresources, warn); derr == nil {
			v, err = resolve(again)
		}
	}
	return v, err
}
