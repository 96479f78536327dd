package elevation

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Direct mode (no proxy, Kubernetes 1.36+ constrained impersonation): a
// live grant is materialised as RBAC its requester uses to impersonate
// themselves with the grant's group, and removed when it ends.
//
//   - A ClusterRole and ClusterRoleBinding letting the requester take, by
//     impersonate:user-info, their own name, the group GroupOf(ns, role)
//     and the grant's extras with its values, and nothing else (identities
//     are asked outside any namespace), and ask discovery so.
//   - A Role and RoleBinding in the grant's namespace with the role's
//     rules as impersonate-on:user-info:VERB: the requests they may make
//     so.
//
// All four carry the label GrantLabel: the grant's UID.

// GrantLabel is the UID of the grant a materialised object serves.
const GrantLabel = "sudo.kubectl-impersonate.io/grant-uid"

// ReasonExtra and TicketExtra carry a grant's reason and ticket.
const (
	ReasonExtra = "kubectl-impersonate.io/sudo-reason"
	TicketExtra = "kubectl-impersonate.io/sudo-ticket"
)

// standardVerbs are what a rule's * stands for as impersonate-on verbs
// (impersonate-on:user-info:* would be a verb of its own, not a wildcard).
var standardVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

// DirectObjects are the four objects that materialise g, whose role has
// rules (as the cluster holds it).
type DirectObjects struct {
	ClusterRole        *rbacv1.ClusterRole
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
	Role               *rbacv1.Role
	RoleBinding        *rbacv1.RoleBinding
}

// DirectPrefix starts the name of every materialised object.
const DirectPrefix = "sudo.kubectl-impersonate.io:"

// DirectName is the name of g's materialised objects.
func DirectName(g Grant) string { return DirectPrefix + g.Namespace + ":" + g.Name }

// Direct materialises g with its role's rules.
func Direct(g Grant, rules []rbacv1.PolicyRule) DirectObjects {
	name := DirectName(g)
	meta := func(ns string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{GrantLabel: string(g.UID)}}
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: g.Spec.Requester}}
	const verb = "impersonate:user-info"
	extras := []rbacv1.PolicyRule{{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"users"},
		ResourceNames: []string{g.Spec.Requester}, Verbs: []string{verb}},
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"groups"},
			ResourceNames: []string{GroupOf(g.Namespace, g.Spec.Role)}, Verbs: []string{verb}},
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"userextras/" + GrantExtra},
			ResourceNames: []string{g.Ref()}, Verbs: []string{verb}},
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"userextras/" + ReasonExtra},
			ResourceNames: []string{CleanText(g.Spec.Reason)}, Verbs: []string{verb}},
		// Discovery and the version, which kubectl asks as the impersonated
		// user too (a Role holds no non-resource URL).
		{NonResourceURLs: []string{"/api", "/api/*", "/apis", "/apis/*", "/version", "/openapi/*"},
			Verbs: []string{"impersonate-on:user-info:get"}}}
	if t := CleanText(g.Spec.Ticket); t != "" {
		extras = append(extras, rbacv1.PolicyRule{APIGroups: []string{"authentication.k8s.io"},
			Resources: []string{"userextras/" + TicketExtra}, ResourceNames: []string{t}, Verbs: []string{verb}})
	}
	return DirectObjects{
		ClusterRole: &rbacv1.ClusterRole{ObjectMeta: meta(""), Rules: extras},
		ClusterRoleBinding: &rbacv1.ClusterRoleBinding{ObjectMeta: meta(""), Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}},
		Role: &rbacv1.Role{ObjectMeta: meta(g.Namespace), Rules: ImpersonateOn(rules)},
		RoleBinding: &rbacv1.RoleBinding{ObjectMeta: meta(g.Namespace), Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}},
	}
}

// ImpersonateOn is rules as impersonate-on:user-info:VERB rules: the same
// groups, resources and names, each verb (a * as the standard verbs)
// allowed to a request made as an impersonated user. Non-resource rules
// are dropped (a Role holds none).
func ImpersonateOn(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, r := range rules {
		if len(r.Resources) == 0 {
			continue
		}
		var verbs []string
		for _, v := range r.Verbs {
			if v == rbacv1.VerbAll {
				for _, s := range standardVerbs {
					verbs = append(verbs, "impersonate-on:user-info:"+s)
				}
				continue
			}
			verbs = append(verbs, "impersonate-on:user-info:"+v)
		}
		out = append(out, rbacv1.PolicyRule{APIGroups: r.APIGroups, Resources: r.Resources,
			ResourceNames: r.ResourceNames, Verbs: dedupe(verbs)})
	}
	return out
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// DirectKubeconfigAs is the impersonation a requester's kubectl sends in
// direct mode: themselves, the grant's group, its extras.
func DirectKubeconfigAs(g Grant) (user string, groups []string, extra map[string][]string) {
	extra = map[string][]string{GrantExtra: {g.Ref()}}
	if r := CleanText(g.Spec.Reason); r != "" {
		extra[ReasonExtra] = []string{r}
	}
	if t := CleanText(g.Spec.Ticket); t != "" {
		extra[TicketExtra] = []string{t}
	}
	return g.Spec.Requester, []string{GroupOf(g.Namespace, g.Spec.Role)}, extra
}
