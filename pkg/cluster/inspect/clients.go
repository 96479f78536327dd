// Package inspect holds the inspection use cases below their commands.
//
//   - The access matrices: one per namespace, with the escalation paths and
//     --diff-as.
//   - The filtered list, why and who-can.
//   - The evaluation of RBAC objects read once, where it gives the server's
//     answer.
//
// Each asks the API server through a small interface an *rbac.Client
// implements, and returns what the command prints.
package inspect

import (
	"context"
	"errors"
	"fmt"
	"slices"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbac"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbaceval"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/resource"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/risk"
)

// WhoAmIClient asks the API server who the credentials are
// (SelfSubjectReview).
type WhoAmIClient interface {
	WhoAmI(ctx context.Context) (*authnv1.UserInfo, string, error)
}

// RBACReader reads the RBAC objects of a namespace ("" for all) and the
// cluster.
type RBACReader interface {
	ReadRBAC(ctx context.Context, namespace string) (*rbaceval.RBAC, error)
}

// Discoverer is the server's discovery (resource.Discoverer, its one
// owner).
type Discoverer = resource.Discoverer

// RulesClient is an identity whose rules the server reviews.
type RulesClient interface {
	WhoAmIClient
	RulesReview(ctx context.Context, namespace string) ([]authzv1.ResourceRule, bool, error)
}

// NamespaceLister lists the namespaces the client may list.
type NamespaceLister interface {
	Namespaces(ctx context.Context) ([]string, error)
}

// WhyClient asks the authorizer and reads RBAC.
type WhyClient interface {
	WhoAmIClient
	RBACReader
	Discoverer
	Why(ctx context.Context, t rbaceval.Target) (*authzv1.SubjectAccessReviewStatus, error)
}

// WhoCanClient reads RBAC, and verifies a subject with the chain.
type WhoCanClient interface {
	RBACReader
	Discoverer
	VerifySubject(ctx context.Context, s rbacv1.Subject, t rbaceval.Target) (*authzv1.SubjectAccessReviewStatus, error)
}

// AccessClient builds access matrices.
type AccessClient interface {
	RulesClient
	Discoverer
	NamespaceLister
	RBACReader
	Access(ctx context.Context, resources []resource.Resource, o rbac.AccessOptions) (*rbac.Matrix, error)
}

// ListClient lists objects and filters them by what an identity may do.
type ListClient interface {
	RulesClient
	Discoverer
	RBACReader
	NamespacesWith(ctx context.Context, selector string) ([]string, error)
	List(ctx context.Context, r resource.Resource, namespace, selector string, full bool) ([]resource.Object, error)
	Filter(
		ctx context.Context, r resource.Resource, objs []resource.Object, o rbac.FilterOptions,
	) ([]rbac.Decision, rbac.FilterStats, error)
}

var (
	_ WhyClient    = (*rbac.Client)(nil)
	_ WhoCanClient = (*rbac.Client)(nil)
	_ AccessClient = (*rbac.Client)(nil)
	_ ListClient   = (*rbac.Client)(nil)
)

// ResolveTarget resolves t's resource as kubectl does (short names, kinds,
// resource.group, resource.version.group, subresources) through
// discovery (resource.Resolve: after a miss in kubectl's cache, once more
// from the server). Like kubectl auth can-i, a resource the server does
// not serve gets a warning on warn, naming the closest one, and t is asked
// as typed; so does a discovery that fails.
func ResolveTarget(ctx context.Context, d Discoverer, t rbaceval.Target, warn func(string)) (rbaceval.Target, error) {
	if t.NonResourceURL != "" {
		return t, nil
	}
	resolved, err := resource.Resolve(ctx, d, true, warn, func(all []resource.Resource) (rbaceval.Target, error) {
		return resolveTarget(all, t)
	})
	var failed *resource.DiscoveryError
	switch {
	case err == nil:
		return resolved, nil
	case errors.As(err, &failed):
		if ctx.Err() != nil {
			return t, err
		}
		warn(fmt.Sprintf("resolving %s through discovery: %v; asking about it as typed", t.ResourceDisplay(),
			failed.Err))
	default:
		warn(err.Error())
	}
	return t, nil
}

// Resources are the resources of one scope (cluster-scoped, or
// namespaced) the server serves, or, when typed names some, those, each
// resolved as kubectl resolves it (resource.Resolve).
func Resources(ctx context.Context, d Discoverer, typed []string, subresources, clusterScope bool,
	warn func(string)) ([]resource.Resource, error) {
	resolve := func(all []resource.Resource) ([]resource.Resource, error) {
		var scope []resource.Resource
		for _, r := range all {
			if r.Namespaced != clusterScope {
				scope = append(scope, r)
			}
		}
		if len(typed) == 0 {
			return scope, nil
		}
		var out []resource.Resource
		for _, name := range typed {
			r, err := resource.ResolveResource(scope, name)
			if err != nil {
				return nil, err
			}
			if !slices.ContainsFunc(out, func(x resource.Resource) bool { return x.String() == r.String() }) {
				out = append(out, r)
			}
		}
		return out, nil
	}
	out, err := resource.Resolve(ctx, d, subresources, warn, resolve)
	var failed *resource.DiscoveryError
	if err != nil && len(typed) > 0 && !errors.As(err, &failed) {
		return nil, fmt.Errorf("--resource: %w", err)
	}
	return out, err
}

// ExtraOf copies a UserInfo's extra values into plain string lists.
func ExtraOf[V ~[]string](extra map[string]V) map[string][]string {
	if len(extra) == 0 {
		return nil
	}
	out := make(map[string][]string, len(extra))
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// resolveTarget resolves t's resource through discovery (all, subresources
// included), so that "get po", "get pod" and "get Pod" ask about pods as
// kubectl auth can-i does. Non-resource URLs, "*" and the impersonation
// resources (users, groups, uids, userextras; constrained impersonation's
// users, groups, serviceaccounts and nodes of authentication.k8s.io), which
// discovery does not list, are left as they are.
func resolveTarget(all []resource.Resource, t rbaceval.Target) (rbaceval.Target, error) {
	if t.NonResourceURL != "" || t.Resource == "*" ||
		(t.Group == "" && slices.Contains([]string{"users", "groups", "serviceaccounts/token"}, t.Resource)) ||
		(t.Group == risk.ImpersonationGroup &&
			slices.Contains([]string{"uids", "userextras", "users", "groups", "serviceaccounts", "nodes"},
				t.Resource)) {
		return t, nil
	}
	typed := t.Resource
	if t.Group != "" {
		typed += "." + t.Group
	}
	r, err := resource.ResolveResource(all, typed)
	if err != nil {
		return t, err
	}
	// The subresource is asked as typed, as kubectl auth can-i
	// --subresource asks it (RBAC rules may name one a server lacks).
	t.Resource, t.Group = r.Name, r.Group
	return t, nil
}
