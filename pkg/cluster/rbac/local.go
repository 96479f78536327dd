package rbac

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
func (r *RBAC) RulesFor(user string, groups []string, namespace string) (rules []authzv1.ResourceRule,
	incomplete bool) {
	if slices.Contains(groups, SuperuserGroup) {
		return Superuser(namespace)
	}
	add := func(policy []rbacv1.PolicyRule) {
		for _, p := range policy {
			if len(p.Resources) == 0 {
				continue
			}
			rules = append(rules,
				authzv1.ResourceRule{Verbs: p.Verbs, APIGroups: p.APIGroups, Resources: p.Resources,
					ResourceNames: p.ResourceNames})
		}
	}
	for _, b := range r.ClusterRoleBindings {
		if b.RoleRef.Kind == "ClusterRole" && AppliesTo(b.Subjects, user, groups, "") {
			add(r.ClusterRoles[b.RoleRef.Name])
		}
	}
	if namespace == "" {
		return rules, false
	}
	for _, b := range r.RoleBindings {
		if b.Namespace != namespace || !AppliesTo(b.Subjects, user, groups, namespace) {
			continue
		}
		switch b.RoleRef.Kind {
		case "ClusterRole":
			add(r.ClusterRoles[b.RoleRef.Name])
		case "Role":
			add(r.Roles[namespace+"/"+b.RoleRef.Name])
		}
	}
	return rules, false
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
