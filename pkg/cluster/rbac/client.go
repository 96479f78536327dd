// Package rbac asks the cluster what an identity may do, as its RBAC
// authorizer answers.
//
//   - access: the access matrix.
//   - list: the objects of a list the identity may act on.
//   - who-can --verify: the bindings that grant an action, checked.
//   - why: the server's own reason for a decision.
//
// Where it reads RBAC objects itself, pkg/cluster/rbaceval evaluates them
// with Kubernetes' rule semantics. Every answer it is meant to share with
// the server is compared with SubjectAccessReview in the end-to-end tests.
// What the server serves (discovery, names, lists) is
// pkg/cluster/resource's.
package rbac

import (
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/kubeapi"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/resource"
)

// Client asks one API server, as the kubeconfig's identity.
type Client struct {
	*resource.Client
}

// New returns a Client on c.
func New(c *kubeapi.Client) *Client { return &Client{Client: resource.New(c)} }
