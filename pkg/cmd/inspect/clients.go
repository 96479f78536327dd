package inspect

import (
	"context"
	"errors"
	"fmt"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/rbac"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/session"
)

// The seams of the inspection commands, in kubectl's shape: Complete(args)
// builds them from the kubeconfig flags (an *rbac.Client implements them
// all), Run only uses them, and the tests drive Run with fakes.

// WhoAmIClient asks the API server who the credentials are
// (SelfSubjectReview).
type WhoAmIClient interface {
	WhoAmI(ctx context.Context) (*authnv1.UserInfo, string, error)
}

// selfSubjectReviewer returns the API server's SelfSubjectReview whole.
type selfSubjectReviewer interface {
	SelfSubjectReview(ctx context.Context) (*authnv1.SelfSubjectReview, string, error)
}

type whoAmIClient = WhoAmIClient

// rbacReader reads the RBAC objects of a namespace ("" for all) and the
// cluster.
type rbacReader interface {
	ReadRBAC(ctx context.Context, namespace string) (*rbac.RBAC, error)
}

// discoverer lists the resources the server serves (discovery), from
// kubectl's cache until Invalidate (which says whether the last answer
// came from it).
type discoverer interface {
	Discover(ctx context.Context, subresources bool) ([]rbac.Resource, error)
	Invalidate() bool
}

// whyClient asks the authorizer and reads RBAC.
type whyClient interface {
	whoAmIClient
	rbacReader
	discoverer
	Why(ctx context.Context, t rbac.Target) (*authzv1.SubjectAccessReviewStatus, error)
}

// whoCanClient reads RBAC, and verifies a subject with the chain.
type whoCanClient interface {
	rbacReader
	discoverer
	VerifySubject(ctx context.Context, s rbacv1.Subject, t rbac.Target) (*authzv1.SubjectAccessReviewStatus, error)
}

// namespaceLister lists the namespaces the client may list.
type namespaceLister interface {
	Namespaces(ctx context.Context) ([]string, error)
}

// accessClient builds the access matrix.
type accessClient interface {
	whoAmIClient
	discoverer
	namespaceLister
	rbacReader
	Access(ctx context.Context, resources []rbac.Resource, o rbac.AccessOptions) (*rbac.Matrix, error)
	RulesReview(ctx context.Context, namespace string) ([]authzv1.ResourceRule, bool, error)
}

// callerClient is the kubeconfig's own identity (--as aside): it lists the
// namespaces and reads the RBAC objects for access -A.
type callerClient interface {
	namespaceLister
	rbacReader
}

// listClient lists objects and filters them by what an identity may do.
type listClient interface {
	rulesClient
	discoverer
	rbacReader
	NamespacesWith(ctx context.Context, selector string) ([]string, error)
	List(ctx context.Context, r rbac.Resource, namespace, selector string, full bool) ([]rbac.Object, error)
	Filter(ctx context.Context, r rbac.Resource, objs []rbac.Object, o rbac.FilterOptions) ([]rbac.Decision, rbac.FilterStats, error)
	// Requests counts the requests sent.
	Requests() int
}

var (
	_ whyClient    = (*rbac.Client)(nil)
	_ whoCanClient = (*rbac.Client)(nil)
	_ accessClient = (*rbac.Client)(nil)
	_ listClient   = (*rbac.Client)(nil)
)

// resolveTarget resolves t's resource as kubectl does (short names, kinds,
// resource.group, resource.version.group, subresources) through
// discovery. Like kubectl auth can-i, a resource the server does not serve
// gets a warning on warn, naming the closest one, and t is asked as typed;
// so does a discovery that fails.
func resolveTarget(ctx context.Context, d discoverer, t rbac.Target, warn func(string)) (rbac.Target, error) {
	if t.NonResourceURL != "" {
		return t, nil
	}
	all, err := discover(ctx, d, true, warn)
	if err != nil {
		if ctx.Err() != nil {
			return t, err
		}
		warn(fmt.Sprintf("resolving %s through discovery: %v; asking about it as typed", t.ResourceDisplay(), err))
		return t, nil
	}
	resolved, err := rbac.ResolveTarget(all, t)
	if err != nil && d.Invalidate() {
		// Not in the cached discovery: ask the server, as kubectl does
		// (a CRD installed since the cache was written).
		if again, derr := discover(ctx, d, true, warn); derr == nil {
			resolved, err = rbac.ResolveTarget(again, t)
		}
	}
	if err != nil {
		warn(err.Error())
		return t, nil
	}
	return resolved, nil
}

// discover is d's discovery with a partial failure (one API group down)
// turned into a warning on warn, as kubectl's "couldn't get resource list".
func discover(ctx context.Context, d discoverer, subresources bool, warn func(string)) ([]rbac.Resource, error) {
	all, err := d.Discover(ctx, subresources)
	var partial *rbac.PartialDiscoveryError
	if errors.As(err, &partial) {
		warn(partial.Error())
		return all, nil
	}
	return all, err
}

// cachedToken is the cached token of the session the kubectl flags select,
// as get-token would hand it out now (session.ErrNotOurs when the
// context's user does not run this plugin).
func cachedToken(ctx context.Context, kube *cmdutil.KubeFlags, getenv func(string) string) (string, *session.TokenSource, error) {
	s, err := kube.Session(getenv)
	if err != nil {
		return "", nil, err
	}
	return s.CachedToken(ctx)
}
