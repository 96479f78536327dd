package privilege

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/risk"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rolegen"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
)

// SudoProposal is least-privilege --sudo-role's answer: the role a sudo
// request asks for, sized by a recording, and what the recording used that
// a grant cannot give.
type SudoProposal struct {
	Namespace string `json:"namespace"`
	Role      string `json:"role"`
	// Group is what a request under a grant for Role carries: the
	// RoleBinding binds it.
	Group string `json:"group"`
	// Request is the command that asks for it.
	Request string `json:"request"`
	// LeftOut are the cells used at cluster scope or in other namespaces:
	// a grant elevates requests in its namespace only.
	LeftOut []rolegen.Cell `json:"leftOut,omitempty"`
	// RBACWrites are the namespace's cells that write roles or bindings
	// (risk.WritesGrants): deploy/sudo's admission refuses them under a
	// grant (a binding made would outlive it), so the Role leaves them out.
	RBACWrites []rolegen.Cell `json:"rbacWrites,omitempty"`
}

// writesGrants tells whether a rule's verb writes a role or a binding in
// any of its groups and resources (risk.WritesGrants).
func writesGrants(r rbacv1.PolicyRule, verb string) bool {
	for _, g := range r.APIGroups {
		if slices.ContainsFunc(r.Resources, func(res string) bool { return risk.WritesGrants(verb, g, res) }) {
			return true
		}
	}
	return false
}

// validateSudoRole checks --sudo-role against the flags it replaces.
func (o *LeastPrivilegeOptions) validateSudoRole() error {
	switch {
	case o.SudoRole == "":
		return nil
	case o.Subject != "":
		return errors.New("--sudo-role binds the Role to the group a grant carries: leave out --subject")
	case o.Name != rolegen.DefaultName:
		return errors.New("--sudo-role names the Role: leave out --name")
	}
	if bad := content.IsPathSegmentName(o.SudoRole); len(bad) > 0 || strings.Contains(o.SudoRole, ":") {
		return fmt.Errorf("--sudo-role %q is not a Role name (no /, %%, : or . alone): give the name a SudoPolicy "+
			"will list", o.SudoRole)
	}
	return nil
}

// proposeSudoRole narrows res to a sudo request's role: the Role of one
// namespace (ns when given, else the one the use was in), bound to the
// grant's group; what was used elsewhere is listed, not granted.
func proposeSudoRole(res *Result, role, ns string) error {
	var used []string
	for _, r := range res.Roles {
		used = append(used, r.Namespace)
	}
	switch {
	case len(used) == 0:
		return errors.New("--sudo-role: the recording used nothing in a namespace the cluster allowed, and a sudo " +
			"grant elevates one namespace's requests")
	case ns == "" && len(used) > 1:
		return fmt.Errorf("--sudo-role: the recording used %d namespaces (%s) and a sudo grant is for one: choose it "+
			"with -n", len(used), logging.OneLine(strings.Join(used, ", "), 300))
	case ns == "":
		ns = used[0]
	case !slices.Contains(used, ns):
		return fmt.Errorf("--sudo-role: the recording used nothing in namespace %s the cluster allowed (it used %s)",
			logging.Printable(ns), logging.OneLine(strings.Join(used, ", "), 300))
	}
	p := &SudoProposal{Namespace: ns, Role: role, Group: elevation.GroupOf(ns, role),
		Request: "kubectl impersonate sudo request -n " + logging.ShellQuote(ns) + " --role " +
			logging.ShellQuote(role) + " --for 30m --reason TEXT"}
	for _, c := range res.Used {
		switch {
		case c.Namespace != ns:
			p.LeftOut = append(p.LeftOut, c)
		case risk.WritesGrants(c.Verb, c.APIGroup, c.Resource):
			p.RBACWrites = append(p.RBACWrites, c)
		}
	}
	i := slices.IndexFunc(res.Roles, func(r rbacv1.Role) bool { return r.Namespace == ns })
	res.Roles = res.Roles[i : i+1]
	var rules []rbacv1.PolicyRule
	for _, r := range res.Roles[0].Rules {
		r.Verbs = slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return writesGrants(r, v) })
		if len(r.Verbs) > 0 {
			rules = append(rules, r)
		}
	}
	if len(rules) == 0 {
		return fmt.Errorf("--sudo-role: what the recording used in %s writes roles or bindings only, which a sudo "+
			"grant may not (deploy/sudo's admission refuses it: a binding would outlive the grant)",
			logging.Printable(ns))
	}
	res.Roles[0].Rules = rules
	res.ClusterRole, res.ClusterRoleBinding = nil, nil
	res.RoleBindings = []rbacv1.RoleBinding{rolegen.RoleBinding(res.Roles[0],
		rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: p.Group})}
	res.Escalations = slices.DeleteFunc(res.Escalations, func(e rolegen.Escalation) bool {
		return e.Namespace != ns || risk.WritesGrants(e.Verb, e.APIGroup, e.Resource)
	})
	res.Sudo = p
	return nil
}

// sudoSummary is --sudo-role's lines above the YAML.
func sudoSummary(p *SudoProposal, prefix string) string {
	var b strings.Builder
	ns := logging.Printable(p.Namespace) // from a log
	if n := len(p.LeftOut); n > 0 {
		fmt.Fprintf(&b, "%snot in the role: %s at cluster scope or in other namespaces (a grant elevates requests in "+
			"%s only; the others go as yourself)\n", prefix, plural(n, "cell"), ns)
	}
	if n := len(p.RBACWrites); n > 0 {
		fmt.Fprintf(&b, "%snot in the role: %s writing roles or bindings (deploy/sudo's admission refuses them "+
			"under a grant: a binding would outlive it)\n", prefix, plural(n, "cell"))
	}
	role := logging.Printable(p.Role)
	fmt.Fprintf(&b, "%ssudo: bind it with the RoleBinding below (its group is what a grant of %s carries), add %s "+
		"to spec.roles of the SudoPolicy in %s, then ask: %s\n", prefix, role, role, ns,
		logging.Printable(p.Request))
	return b.String()
}
