package rbaceval

import (
	"slices"
	"strings"

	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// RulesFor is the rules review RBAC would answer for the identity (user,
// its groups) in namespace, computed from the snapshot as kube-apiserver's
// RBAC rule resolver computes it (k8s.io/kubernetes
// pkg/registry/rbac/validation/rule.go VisitRulesFor, appliesToUser): the
// rules of every ClusterRoleBinding that applies to the identity, then
// those of the namespace's RoleBindings that do. A binding to a role that
// does not exist grants nothing (the server's review is then still
// complete, with an evaluation error). An identity in system:masters gets
// Superuser's rule, whatever is bound. Only resource rules are returned
// (the matrix asks no non-resource URL); incomplete is always false.
func (r *RBAC) RulesFor(
	user string, groups []string, namespace string,
) (rules []authzv1.ResourceRule, incomplete bool) {
	if slices.Contains(groups, SuperuserGroup) {
		return Superuser(namespace)
	}
	scope := ClusterScope
	if namespace != "" {
		scope = InNamespace(namespace)
	}
	for _, g := range r.BindingsFor(user, groups, scope) {
		for _, p := range r.RulesOf(g) {
			if len(p.Resources) > 0 {
				rules = append(rules, authzv1.ResourceRule{Verbs: p.Verbs, APIGroups: p.APIGroups,
					Resources: p.Resources, ResourceNames: p.ResourceNames})
			}
		}
	}
	return rules, false
}

// Scope is which RoleBindings apply beside every ClusterRoleBinding: a
// namespace's, every namespace's, or none (ClusterScope, the zero Scope).
type Scope struct {
	// Namespace is the namespace whose RoleBindings apply.
	Namespace string
	// AllNamespaces: every namespace's RoleBindings apply.
	AllNamespaces bool
}

// The scopes.
var (
	ClusterScope  = Scope{}
	AllNamespaces = Scope{AllNamespaces: true}
)

// InNamespace is the scope of namespace ns.
func InNamespace(ns string) Scope { return Scope{Namespace: ns} }

// ScopeOf is access's scope: the cluster's alone (clusterOnly:
// --cluster-scope), else namespace's, every namespace's for "" (-A).
func ScopeOf(namespace string, clusterOnly bool) Scope {
	switch {
	case clusterOnly:
		return ClusterScope
	case namespace == "":
		return AllNamespaces
	}
	return InNamespace(namespace)
}

// BindingsFor are the bindings that apply to the identity (user, its
// groups) in s, as kube-apiserver's RBAC rule resolver walks them.
//
//   - Every ClusterRoleBinding to a ClusterRole, then the RoleBindings of s
//     (VisitRulesFor's order).
//   - Each Grant keeps the subjects that matched.
//
// RulesFor, access's rules and --graph's picture walk them here.
func (r *RBAC) BindingsFor(user string, groups []string, s Scope) []Grant {
	var out []Grant
	mine := func(subjects []rbacv1.Subject, ns string) []rbacv1.Subject {
		var m []rbacv1.Subject
		for _, sub := range subjects {
			if AppliesTo([]rbacv1.Subject{sub}, user, groups, ns) {
				m = append(m, sub)
			}
		}
		return m
	}
	for _, b := range r.ClusterRoleBindings {
		if m := mine(b.Subjects, ""); len(m) > 0 && b.RoleRef.Kind == "ClusterRole" {
			out = append(out, Grant{Binding: b.Name, BindingKind: "ClusterRoleBinding", Role: b.RoleRef.Name,
				RoleKind: "ClusterRole", Subjects: m})
		}
	}
	for _, b := range r.RoleBindings {
		if !s.AllNamespaces && (s.Namespace == "" || b.Namespace != s.Namespace) {
			continue
		}
		if m := mine(b.Subjects, b.Namespace); len(m) > 0 {
			out = append(out, Grant{Binding: b.Name, BindingKind: "RoleBinding", Namespace: b.Namespace,
				Role: b.RoleRef.Name, RoleKind: b.RoleRef.Kind, Subjects: m})
		}
	}
	return out
}

// RulesOf are the rules of the role g binds.
func (r *RBAC) RulesOf(g Grant) []rbacv1.PolicyRule {
	return r.rulesOf(rbacv1.RoleRef{Kind: g.RoleKind, Name: g.Role}, g.Namespace)
}

// AppliesTo is kube-apiserver's appliesToUser over subjects: a User by
// name, a Group among the identity's groups, a ServiceAccount by its
// username, the subject's namespace defaulting to the binding's.
func AppliesTo(subjects []rbacv1.Subject, user string, groups []string, bindingNamespace string) bool {
	return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
		switch s.Kind {
		case rbacv1.UserKind:
			return s.Name == user
		case rbacv1.GroupKind:
			return slices.Contains(groups, s.Name)
		case rbacv1.ServiceAccountKind:
			ns := bindingNamespace
			if s.Namespace != "" {
				ns = s.Namespace
			}
			return ns != "" && user == ServiceAccountUser(ns, s.Name)
		}
		return false
	})
}

// LocalRules answers rules reviews from a snapshot of the RBAC objects
// for one identity: AccessOptions.LocalRules.
type LocalRules func(namespace string) ([]authzv1.ResourceRule, bool)

// SuperuserGroup is system:masters: kube-apiserver puts an authorizer that
// allows its members every request before the configured chain
// (k8s.io/kubernetes pkg/kubeapiserver/authorizer: NewPrivilegedGroups,
// appended first; a rule resolver it is not, so rules reviews do not list
// it).
const SuperuserGroup = "system:masters"

// Superuser is the LocalRules of an identity in SuperuserGroup: every verb
// on every resource, in every namespace.
func Superuser(string) ([]authzv1.ResourceRule, bool) {
	return []authzv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}, false
}

// Local is the LocalRules of the identity (user, groups) over r.
func (r *RBAC) Local(user string, groups []string) LocalRules {
	return func(namespace string) ([]authzv1.ResourceRule, bool) { return r.RulesFor(user, groups, namespace) }
}

// SameRules tells whether two rule lists grant the same, as sets of rules
// (order and repetition aside): the check that a snapshot's rules are the
// server's.
func SameRules(a, b []authzv1.ResourceRule) bool {
	key := func(rules []authzv1.ResourceRule) map[string]bool {
		out := map[string]bool{}
		for _, r := range rules {
			parts := make([]string, 0, 4)
			for _, l := range [][]string{r.Verbs, r.APIGroups, r.Resources, r.ResourceNames} {
				c := slices.Clone(l)
				slices.Sort(c)
				parts = append(parts, strings.Join(slices.Compact(c), ","))
			}
			out[strings.Join(parts, "|")] = true
		}
		return out
	}
	ka, kb := key(a), key(b)
	if len(ka) != len(kb) {
		return false
	}
	for k := range ka {
		if !kb[k] {
			return false
		}
	}
	return true
}

// ClusterScopeNamespace is the namespace of the rules review that lists
// the cluster's rules alone: no namespace can have this name, so no
// RoleBinding applies (kube-apiserver's RBAC lists the ClusterRoleBindings'
// rules, then the namespace's RoleBindings'; the review does not check the
// name).
const ClusterScopeNamespace = "kubectl-impersonate.io/cluster-scope"
