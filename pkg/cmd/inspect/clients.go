package inspect

import (
	"context"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/rbac"
)

// The seams of the inspection commands, in kubectl's shape: Complete(args)
// builds them from the kubeconfig flags (an *rbac.Client implements them
// all), Run only uses them, and the tests drive Run with fakes.

// whoAmIClient asks the API server who the credentials are
// (SelfSubjectReview).
type whoAmIClient interface {
	WhoAmI(ctx context.Context) (*authnv1.UserInfo, string, error)
}

// rbacReader reads the RBAC objects of a namespace ("" for all) and the
// cluster.
type rbacReader interface {
	ReadRBAC(ctx context.Context, namespace string) (*rbac.RBAC, error)
}

// whyClient asks the authorizer and reads RBAC.
type whyClient interface {
	whoAmIClient
	rbacReader
	Why(ctx context.Context, t rbac.Target) (*authzv1.SubjectAccessReviewStatus, error)
}

// accessClient builds the access matrix.
type accessClient interface {
	whoAmIClient
	Discover(ctx context.Context, subresources bool) ([]rbac.Resource, error)
	Namespaces(ctx context.Context) ([]string, error)
	Access(ctx context.Context, resources []rbac.Resource, o rbac.AccessOptions) (*rbac.Matrix, error)
}

// listClient lists objects and filters them by what an identity may do.
type listClient interface {
	whoAmIClient
	Discover(ctx context.Context, subresources bool) ([]rbac.Resource, error)
	NamespacesWith(ctx context.Context, selector string) ([]string, error)
	List(ctx context.Context, r rbac.Resource, namespace, selector string, full bool) ([]rbac.Object, error)
	Filter(ctx context.Context, r rbac.Resource, objs []rbac.Object, o rbac.FilterOptions) ([]rbac.Decision, rbac.FilterStats, error)
	// Requests counts the requests sent.
	Requests() int
}

var (
	_ whyClient    = (*rbac.Client)(nil)
	_ accessClient = (*rbac.Client)(nil)
	_ listClient   = (*rbac.Client)(nil)
)
