// Package resource is what the API server serves, as kubectl sees it.
//
//   - The resources of discovery, from kubectl's discovery cache until a
//     name is missing.
//   - Their resolution from what a person types (plural, singular, kind,
//     short name, resource.group).
//   - The listing of their objects, paged and bounded.
package resource

import (
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/kubeapi"
)

// Client asks one API server about its resources.
type Client struct {
	*kubeapi.Client
	// DiscoveryCache is kubectl's discovery cache directory for the server
	// (kubeapi.DiscoveryCacheDir; "" caches nothing).
	DiscoveryCache string

	// invalidated makes the next Discover ask the server; fromCache says
	// the last one did not.
	invalidated, fromCache bool
}

// New returns a Client on c.
func New(c *kubeapi.Client) *Client { return &Client{Client: c} }

// Resource is one row of the matrix.
type Resource struct {
	Group      string   `json:"group"`
	Version    string   `json:"version"`
	Name       string   `json:"resource"`
	Namespaced bool     `json:"namespaced"`
	Verbs      []string `json:"-"`
	// Kind, SingularName and ShortNames resolve a name typed by a user.
	Kind         string   `json:"-"`
	SingularName string   `json:"-"`
	ShortNames   []string `json:"-"`
	// Priority is the resource's place in discovery (the core group first,
	// then the groups in the server's order: built-in groups before
	// CRDs'), which decides between resources of one name, as kubectl's
	// RESTMapper does.
	Priority int `json:"-"`
}

// String is kubectl's resource.group notation.
func (r Resource) String() string {
	if r.Group == "" {
		return r.Name
	}
	return r.Name + "." + r.Group
}
