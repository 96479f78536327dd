package rbac

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbaceval"
)

// ReadRBAC lists roles and bindings of namespace ("" for every namespace)
// and the cluster's.
func (c *Client) ReadRBAC(ctx context.Context, namespace string) (*rbaceval.RBAC, error) {
	r := &rbaceval.RBAC{Roles: map[string][]rbacv1.PolicyRule{}, ClusterRoles: map[string][]rbacv1.PolicyRule{}}
	nsPath := "/apis/rbac.authorization.k8s.io/v1/"
	if namespace != "" {
		nsPath += "namespaces/" + namespace + "/"
	}
	var roles rbacv1.RoleList
	var rbs rbacv1.RoleBindingList
	var croles rbacv1.ClusterRoleList
	var crbs rbacv1.ClusterRoleBindingList
	// The four lists at once: one round trip.
	g, gctx := errgroup.WithContext(ctx)
	for path, out := range map[string]any{nsPath + "roles": &roles, nsPath + "rolebindings": &rbs,
		"/apis/rbac.authorization.k8s.io/v1/clusterroles":        &croles,
		"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings": &crbs} {
		g.Go(func() error {
			if err := c.Get(gctx, path, out); err != nil {
				return fmt.Errorf("reading RBAC (%s): %w", path, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for _, x := range roles.Items {
		r.Roles[x.Namespace+"/"+x.Name] = x.Rules
	}
	for _, x := range croles.Items {
		r.ClusterRoles[x.Name] = x.Rules
	}
	r.RoleBindings, r.ClusterRoleBindings = rbs.Items, crbs.Items
	return r, nil
}

// Why asks the authorizer about t with a SelfSubjectAccessReview and returns
// its decision and reason (RBAC names the binding).
func (c *Client) Why(ctx context.Context, t rbaceval.Target) (*authzv1.SubjectAccessReviewStatus, error) {
	spec := authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authzv1.ResourceAttributes{
		Namespace: t.Namespace, Verb: t.Verb, Group: t.Group, Resource: t.Resource, Subresource: t.Subresource,
		Name: t.Name}}
	if t.NonResourceURL != "" {
		spec = authzv1.SelfSubjectAccessReviewSpec{
			NonResourceAttributes: &authzv1.NonResourceAttributes{Path: t.NonResourceURL, Verb: t.Verb}}
	}
	st, err := c.SelfAccessReview(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("asking the authorizer: %w", err)
	}
	return st, nil
}

// syntheticMember is the identity a SubjectAccessReview gives for a
// binding's subject, as kube-apiserver's authenticators would: a user with
// the authenticated group (anonymous: unauthenticated), a member of a
// group, a service account's user and groups. A real member's other groups
// and extra are unknown, and a webhook may decide on them.
func syntheticMember(s rbacv1.Subject) (authzv1.SubjectAccessReviewSpec, error) {
	authenticated := []string{"system:authenticated"}
	sa := func(ns, name string) authzv1.SubjectAccessReviewSpec {
		return authzv1.SubjectAccessReviewSpec{User: rbaceval.ServiceAccountUser(ns, name),
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
	}
	switch s.Kind {
	case rbacv1.UserKind:
		if ns, name, ok := rbaceval.SplitServiceAccount(s.Name); ok {
			return sa(ns, name), nil
		}
		if s.Name == "system:anonymous" {
			return authzv1.SubjectAccessReviewSpec{User: s.Name, Groups: []string{"system:unauthenticated"}}, nil
		}
		return authzv1.SubjectAccessReviewSpec{User: s.Name, Groups: authenticated}, nil
	case rbacv1.GroupKind:
		switch s.Name {
		case "system:unauthenticated":
			return authzv1.SubjectAccessReviewSpec{User: "system:anonymous", Groups: []string{s.Name}}, nil
		case "system:authenticated":
			return authzv1.SubjectAccessReviewSpec{Groups: authenticated}, nil
		}
		return authzv1.SubjectAccessReviewSpec{Groups: []string{s.Name, "system:authenticated"}}, nil
	case rbacv1.ServiceAccountKind:
		return sa(s.Namespace, s.Name), nil
	}
	return authzv1.SubjectAccessReviewSpec{}, fmt.Errorf("a subject of kind %q cannot be verified", s.Kind)
}

// VerifySubject asks the authorizer chain (SubjectAccessReview) whether s,
// a binding's subject, may do t: a user as itself, a group as a member of
// it, a service account as its user and groups; each authenticated. It is
// who-can --verify: RBAC may grant what a webhook before it denies.
func (c *Client) VerifySubject(
	ctx context.Context, s rbacv1.Subject, t rbaceval.Target,
) (*authzv1.SubjectAccessReviewStatus, error) {
	spec, err := syntheticMember(s)
	if err != nil {
		return nil, err
	}
	if t.NonResourceURL != "" {
		spec.NonResourceAttributes = &authzv1.NonResourceAttributes{Path: t.NonResourceURL, Verb: t.Verb}
	} else {
		spec.ResourceAttributes = &authzv1.ResourceAttributes{Namespace: t.Namespace, Verb: t.Verb, Group: t.Group,
			Resource: t.Resource, Subresource: t.Subresource, Name: t.Name}
	}
	st, err := c.SubjectAccessReview(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("verifying %s:%s: %w", s.Kind, s.Name, err)
	}
	return st, nil
}
