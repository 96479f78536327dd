package resource

import (
	"context"
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
			out = append(out, Resource{Group: group, Version: version, Name: r.Name, Namespaced: r.Namespaced, Verbs: r.Verbs,
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
