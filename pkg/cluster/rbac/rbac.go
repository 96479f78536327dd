package rbac

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"
	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/risk"
)

// Target is what a question is about: a verb on a resource (resource.group,
// optionally resource/subresource), maybe one name, in a namespace; or a
// verb on a non-resource URL such as /metrics.
type Target struct {
	Verb        string
	Group       string
	Resource    string
	Subresource string
	Name        string
	Namespace   string
	// NonResourceURL is a path (it starts with "/"); the other fields but
	// Verb are then empty.
	NonResourceURL string
}

// ParseTarget reads "VERB RESOURCE[.GROUP][/SUBRESOURCE] [NAME]", or
// "VERB /PATH" for a non-resource URL.
func ParseTarget(verb, resource, name, namespace string) Target {
	if strings.HasPrefix(resource, "/") {
		return Target{Verb: verb, NonResourceURL: resource}
	}
	t := Target{Verb: verb, Name: name, Namespace: namespace}
	res, sub, _ := strings.Cut(resource, "/")
	t.Resource, t.Group, _ = strings.Cut(res, ".")
	t.Subresource = sub
	return t
}

// ClusterScoped tells whether kube-apiserver asks t at cluster scope
// whatever its namespace (risk.ClusterScoped).
func (t Target) ClusterScoped() bool {
	return t.NonResourceURL == "" && risk.ClusterScoped(t.Verb, t.Group, t.Resource)
}

// ResourceWithSub is "resource/subresource", or the resource alone.
func (t Target) ResourceWithSub() string {
	if t.Subresource != "" {
		return t.Resource + "/" + t.Subresource
	}
	return t.Resource
}

// PolicyRuleAllows tells whether rule grants t.
func PolicyRuleAllows(rule rbacv1.PolicyRule, t Target) bool {
	if t.NonResourceURL != "" {
		return matches(rule.Verbs, t.Verb) && nonResourceURLMatches(rule.NonResourceURLs, t.NonResourceURL)
	}
	if !matches(rule.Verbs, t.Verb) || !matches(rule.APIGroups, t.Group) {
		return false
	}
	a, _ := RuleAllows(authzv1.ResourceRule{Verbs: rule.Verbs, APIGroups: rule.APIGroups, Resources: rule.Resources},
		t.Group, t.ResourceWithSub(), t.Verb)
	if !a {
		return false
	}
	return len(rule.ResourceNames) == 0 || (t.Name != "" && slices.Contains(rule.ResourceNames, t.Name))
}

// nonResourceURLMatches is Kubernetes' rule for non-resource URLs: "*"
// matches every path, a path matches itself, and a path ending in "*"
// matches every path with that prefix.
func nonResourceURLMatches(urls []string, path string) bool {
	return slices.ContainsFunc(urls, func(u string) bool {
		return u == "*" || u == path ||
			(strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimSuffix(u, "*")))
	})
}

// Grant is a binding that grants the target.
type Grant struct {
	Binding     string           `json:"binding"`
	BindingKind string           `json:"bindingKind"`
	Namespace   string           `json:"namespace,omitempty"`
	Role        string           `json:"role"`
	RoleKind    string           `json:"roleKind"`
	Subjects    []rbacv1.Subject `json:"subjects"`
	// Denied (who-can --verify) names the subjects the authorizer chain
	// denies although this binding grants them, with its reason.
	Denied map[string]string `json:"deniedBySubject,omitempty"`
}

// RBAC is a snapshot of the RBAC objects the caller can read.
type RBAC struct {
	Roles               map[string][]rbacv1.PolicyRule // namespace/name
	ClusterRoles        map[string][]rbacv1.PolicyRule
	RoleBindings        []rbacv1.RoleBinding
	ClusterRoleBindings []rbacv1.ClusterRoleBinding
}

// ReadRBAC lists roles and bindings of namespace ("" for every namespace)
// and the cluster's.
func (c *Client) ReadRBAC(ctx context.Context, namespace string) (*RBAC, error) {
	r := &RBAC{Roles: map[string][]rbacv1.PolicyRule{}, ClusterRoles: map[string][]rbacv1.PolicyRule{}}
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

func (r *RBAC) rulesOf(ref rbacv1.RoleRef, namespace string) []rbacv1.PolicyRule {
	if ref.Kind == "ClusterRole" {
		return r.ClusterRoles[ref.Name]
	}
	return r.Roles[namespace+"/"+ref.Name]
}

func anyAllows(rules []rbacv1.PolicyRule, t Target) bool {
	return slices.ContainsFunc(rules, func(p rbacv1.PolicyRule) bool { return PolicyRuleAllows(p, t) })
}

// WhoCan lists the bindings that grant t: RoleBindings in t.Namespace (all
// namespaces when it is empty) and ClusterRoleBindings.
func (r *RBAC) WhoCan(t Target) []Grant {
	var out []Grant
	// Non-resource URLs have no namespace: only ClusterRoleBindings grant
	// them, as in kube-apiserver's RBAC authorizer.
	for _, b := range r.RoleBindings {
		if t.NonResourceURL != "" || t.ClusterScoped() {
			break
		}
		if t.Namespace != "" && b.Namespace != t.Namespace {
			continue
		}
		if anyAllows(r.rulesOf(b.RoleRef, b.Namespace), t) {
			out = append(out,
				Grant{Binding: b.Name, BindingKind: "RoleBinding", Namespace: b.Namespace, Role: b.RoleRef.Name,
					RoleKind: b.RoleRef.Kind, Subjects: b.Subjects})
		}
	}
	for _, b := range r.ClusterRoleBindings {
		if anyAllows(r.ClusterRoles[b.RoleRef.Name], t) {
			out = append(out,
				Grant{Binding: b.Name, BindingKind: "ClusterRoleBinding", Role: b.RoleRef.Name, RoleKind: "ClusterRole",
					Subjects: b.Subjects})
		}
	}
	sort.SliceStable(out,
		func(i, j int) bool { return out[i].Namespace+out[i].Binding < out[j].Namespace+out[j].Binding })
	return out
}

// ForIdentity keeps the grants one of whose subjects is the user, one of
// its groups (system:authenticated included), or, for service accounts,
// the account.
func ForIdentity(grants []Grant, username string, groups []string) []Grant {
	var out []Grant
	for _, g := range grants {
		var mine []rbacv1.Subject
		for _, s := range g.Subjects {
			switch s.Kind {
			case rbacv1.UserKind:
				if s.Name == username {
					mine = append(mine, s)
				}
			case rbacv1.GroupKind:
				if slices.Contains(groups, s.Name) {
					mine = append(mine, s)
				}
			case rbacv1.ServiceAccountKind:
				if username == ServiceAccountUser(s.Namespace, s.Name) {
					mine = append(mine, s)
				}
			}
		}
		if len(mine) > 0 {
			g.Subjects = mine
			out = append(out, g)
		}
	}
	return out
}

// Why asks the authorizer about t with a SelfSubjectAccessReview and returns
// its decision and reason (RBAC names the binding).
func (c *Client) Why(ctx context.Context, t Target) (*authzv1.SubjectAccessReviewStatus, error) {
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
		return authzv1.SubjectAccessReviewSpec{User: ServiceAccountUser(ns, name),
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
	}
	switch s.Kind {
	case rbacv1.UserKind:
		if ns, name, ok := SplitServiceAccount(s.Name); ok {
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
	ctx context.Context, s rbacv1.Subject, t Target,
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

// ResourceDisplay is resource[.group][/subresource] [name], or the path.
func (t Target) ResourceDisplay() string {
	if t.NonResourceURL != "" {
		return t.NonResourceURL
	}
	s := t.Resource
	if t.Group != "" {
		s += "." + t.Group
	}
	if t.Subresource != "" {
		s += "/" + t.Subresource
	}
	if t.Name != "" {
		s += " " + t.Name
	}
	return s
}

// Where is "in namespace X", "in every namespace" or "".
func (t Target) Where() string {
	if t.NonResourceURL != "" {
		return "(a non-resource URL)"
	}
	if t.ClusterScoped() {
		return "at cluster scope"
	}
	if t.Namespace == "" {
		return "in any namespace"
	}
	return "in namespace " + t.Namespace
}

// serviceAccountPrefix begins a service account's username.
const serviceAccountPrefix = "system:serviceaccount:"

// ServiceAccountUser is the username of service account NAME in NS.
func ServiceAccountUser(ns, name string) string { return serviceAccountPrefix + ns + ":" + name }

// SplitServiceAccount reads system:serviceaccount:NS:NAME, as
// kube-apiserver's serviceaccount.SplitUsername reads it.
func SplitServiceAccount(user string) (ns, name string, ok bool) {
	rest, ok := strings.CutPrefix(user, serviceAccountPrefix)
	if !ok {
		return "", "", false
	}
	ns, name, ok = strings.Cut(rest, ":")
	return ns, name, ok && ns != "" && name != "" && !strings.Contains(name, ":")
}
