package rbac

import (
	"context"
	"fmt"
	"slices"
	"strings"

	authzv1 "k8s.io/api/authorization/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/resource"
)

// The escalation paths: verbs that give an identity another's permissions
// (impersonation) or let it grant itself more (bind, escalate), asked as
// kube-apiserver's impersonation filter and RBAC registry ask them
// (k8s.io/apiserver pkg/endpoints/filters/impersonation, mode.go, v0.37).

// ImpersonationGroup is the API group of constrained impersonation's
// resources, and of uids and userextras in the legacy mode.
const ImpersonationGroup = "authentication.k8s.io"

// Constrained impersonation's modes (KEP-5284, Kubernetes 1.35+): a verb
// impersonate:<mode> on the identity, and impersonate-on:<mode>:<verb> on
// each request made as it.
const (
	ModeUserInfo       = "user-info"
	ModeServiceAccount = "serviceaccount"
	ModeArbitraryNode  = "arbitrary-node"
	ModeAssociatedNode = "associated-node"
)

// ImpersonationModes are the constrained modes, in the server's order of
// trying them (after which it tries the legacy impersonate verb).
var ImpersonationModes = []string{ModeAssociatedNode, ModeArbitraryNode, ModeServiceAccount, ModeUserInfo}

// EscalationCheck is one question of the escalation section.
type EscalationCheck struct {
	Verb        string
	Group       string
	Resource    string
	Subresource string
	Namespaced  bool
	// Name is the name the server asks with: "" (a rule with resourceNames
	// then grants some names only), "*" for associated-node, whose check
	// the server makes valid for every node, and for userextras, asked for
	// every key (the subresource) and value (the name) as the server asks
	// a large set of extra.
	Name string
	// Mode is the constrained impersonation mode whose primary check this
	// is (the identity), "" for the others.
	Mode string
}

// String is VERB RESOURCE[.GROUP][/SUBRESOURCE].
func (c EscalationCheck) String() string {
	s := c.Verb + " " + resource.Resource{Group: c.Group, Name: c.Resource}.String()
	if c.Subresource != "" {
		s += "/" + c.Subresource
	}
	return s
}

// EscalationChecks are the questions, in the order they are shown: legacy
// impersonation (kubectl --as: users, groups, service accounts, UIDs and
// extra), bind and escalate on roles (binding a ClusterRole is asked in the
// namespace of a RoleBinding, and at cluster scope for a
// ClusterRoleBinding), and the constrained modes' identity checks.
var EscalationChecks = []EscalationCheck{
	{Verb: "impersonate", Resource: "users"},
	{Verb: "impersonate", Resource: "groups"},
	{Verb: "impersonate", Resource: "serviceaccounts", Namespaced: true},
	{Verb: "impersonate", Group: ImpersonationGroup, Resource: "uids"},
	{Verb: "impersonate", Group: ImpersonationGroup, Resource: "userextras", Subresource: "*", Name: "*"},
	{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "roles", Namespaced: true},
	{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Namespaced: true},
	{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
	{Verb: "escalate", Group: "rbac.authorization.k8s.io", Resource: "roles", Namespaced: true},
	{Verb: "escalate", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
	{Verb: "impersonate:" + ModeUserInfo, Group: ImpersonationGroup, Resource: "users", Mode: ModeUserInfo},
	{Verb: "impersonate:" + ModeUserInfo, Group: ImpersonationGroup, Resource: "groups"},
	{Verb: "impersonate:" + ModeUserInfo, Group: ImpersonationGroup, Resource: "uids"},
	{Verb: "impersonate:" + ModeUserInfo, Group: ImpersonationGroup, Resource: "userextras", Subresource: "*",
		Name: "*"},
	{Verb: "impersonate:" + ModeServiceAccount, Group: ImpersonationGroup, Resource: "serviceaccounts",
		Namespaced: true, Mode: ModeServiceAccount},
	{Verb: "impersonate:" + ModeArbitraryNode, Group: ImpersonationGroup, Resource: "nodes", Mode: ModeArbitraryNode},
	{Verb: "impersonate:" + ModeAssociatedNode, Group: ImpersonationGroup, Resource: "nodes", Name: "*",
		Mode: ModeAssociatedNode},
}

// EscalationCell is an escalation check's answer.
type EscalationCell struct {
	Verb        string `json:"verb"`
	Resource    string `json:"resource"`
	Subresource string `json:"subresource,omitempty"`
	// Namespace is where a namespaced check was asked; "" is cluster scope.
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	Mode      string `json:"mode,omitempty"`
	Cell
}

func (c EscalationCheck) attributes(ns string) authzv1.ResourceAttributes {
	if !c.Namespaced {
		ns = ""
	}
	return authzv1.ResourceAttributes{Namespace: ns, Verb: c.Verb, Group: c.Group, Resource: c.Resource,
		Subresource: c.Subresource, Name: c.Name}
}

// answer is the check's cell from p's rules. A rule for some keys of the
// extra only ("userextras/scopes", "*/scopes") grants some of it.
func (c EscalationCheck) answer(p *planner) Cell {
	res := c.Resource
	if c.Subresource != "" {
		res += "/" + c.Subresource
	}
	cell := p.fromRules(c.Group, res, c.Verb)
	if c.Resource == "userextras" && !cell.Allowed {
		for _, rule := range p.rules {
			if matches(rule.Verbs, c.Verb) && matches(rule.APIGroups, c.Group) &&
				slices.ContainsFunc(rule.Resources, func(r string) bool {
					return strings.HasPrefix(r, "userextras/") || strings.HasPrefix(r, "*/")
				}) {
				cell.Partial = true
			}
		}
	}
	return cell
}

func (c EscalationCheck) cell(ns string, cell Cell) EscalationCell {
	if !c.Namespaced {
		ns = ""
	}
	return EscalationCell{Verb: c.Verb, Resource: resource.Resource{Group: c.Group, Name: c.Resource}.String(),
		Subresource: c.Subresource,
		Namespace:   ns, Name: c.Name, Mode: c.Mode, Cell: cell}
}

// ClusterScopeNamespace is the namespace of the rules review that lists
// the cluster's rules alone: no namespace can have this name, so no
// RoleBinding applies (kube-apiserver's RBAC lists the ClusterRoleBindings'
// rules, then the namespace's RoleBindings'; the review does not check the
// name).
const ClusterScopeNamespace = "kubectl-impersonate.io/cluster-scope"

// clusterPlanner is the planner of the cluster-scoped escalation checks.
// Without a rules review (p.ssar) every check
// is asked. A namespace's review (p) lists every ClusterRoleBinding's rules
// too, but its RoleBindings' as well, which grant nothing at cluster scope:
// when a complete one has no rule that could grant a cluster check, none
// does; otherwise the cluster's rules are reviewed (ClusterScopeNamespace).
// A failed review of them leaves every check to an access review.
func (c *Client) clusterPlanner(ctx context.Context, p *planner, local LocalRules) (*planner, error) {
	if p.ssar {
		return p, nil
	}
	if local != nil {
		rules, incomplete := local(ClusterScopeNamespace)
		return &planner{rules: rules, incomplete: incomplete, authoritative: true}, nil
	}
	if !p.incomplete && !slices.ContainsFunc(EscalationChecks, func(e EscalationCheck) bool {
		cell := e.answer(p)
		return !e.Namespaced && cell.Held()
	}) {
		return p, nil
	}
	rules, incomplete, err := c.RulesReview(ctx, ClusterScopeNamespace)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("reviewing your rules at cluster scope: %w", ctx.Err())
		}
		return &planner{ssar: true}, nil
	}
	return &planner{rules: rules, incomplete: incomplete}, nil
}

// escalationCells answers the escalation checks of namespace (the
// cluster's alone for ""): a namespaced one from p, as a cell of the
// matrix; a cluster-scoped one from cluster when given (asked for an
// earlier matrix of the run), else from cp. The access reviews they need
// are added to jobs.
func escalationCells(p, cp *planner, namespace string, cluster []EscalationCell, jobs *[]job) []EscalationCell {
	var out []EscalationCell
	k := 0
	for _, e := range EscalationChecks {
		if e.Namespaced && namespace == "" {
			continue
		}
		if !e.Namespaced && cluster != nil {
			out = append(out, cluster[k])
			k++
			continue
		}
		pl := p
		if !e.Namespaced {
			pl = cp
		}
		cell := e.answer(pl)
		if pl.ask(cell) {
			*jobs = append(*jobs,
				job{escalation: len(out), rules: cell.Allowed, incomplete: pl.incomplete,
					attrs: e.attributes(namespace)})
		}
		out = append(out, e.cell(namespace, cell))
	}
	return out
}

// ClusterEscalation is m's cluster-scoped escalation cells, for the next
// matrix's AccessOptions (access -A asks them once).
func (m *Matrix) ClusterEscalation() []EscalationCell {
	var out []EscalationCell
	for _, e := range m.Escalation {
		if e.Namespace == "" {
			out = append(out, e)
		}
	}
	return out
}

// maybeHeld tells whether mode's identity check allows, for some names at
// least, or is still to be asked (in jobs).
func maybeHeld(cells []EscalationCell, jobs []job, mode string) bool {
	for i, c := range cells {
		if c.Mode != mode {
			continue
		}
		if c.Held() || slices.ContainsFunc(jobs, func(j job) bool { return j.escalation == i }) {
			return true
		}
	}
	return false
}

// grantedModes are the constrained modes whose identity check cells allow
// (for some names at least): the ones whose impersonate-on cells matter.
func grantedModes(cells []EscalationCell) []string {
	var modes []string
	for _, m := range ImpersonationModes {
		if slices.ContainsFunc(cells, func(c EscalationCell) bool { return c.Mode == m && c.Held() }) {
			modes = append(modes, m)
		}
	}
	return modes
}

// ImpersonateOnVerb is the verb constrained impersonation asks for verb
// while impersonating in mode: impersonate-on:<mode>:<verb>.
func ImpersonateOnVerb(mode, verb string) string { return "impersonate-on:" + mode + ":" + verb }

// ParseImpersonateOn reads impersonate-on:<mode>:<verb>: the mode (one of
// ImpersonationModes) and the verb.
func ParseImpersonateOn(verb string) (mode, onVerb string, ok bool) {
	rest, ok := strings.CutPrefix(verb, "impersonate-on:")
	if !ok {
		return "", "", false
	}
	mode, onVerb, ok = strings.Cut(rest, ":")
	return mode, onVerb, ok && onVerb != "" && slices.Contains(ImpersonationModes, mode)
}

// checksFor are the escalation checks (EscalationChecks) of verb on
// group/resource: none when it is no escalation path.
func checksFor(verb, group, resource string) []EscalationCheck {
	var out []EscalationCheck
	for _, e := range EscalationChecks {
		if e.Verb == verb && e.Group == group && e.Resource == resource {
			out = append(out, e)
		}
	}
	return out
}

// Escalation describes what holding verb on resource (resource[.group],
// without a subresource) lets an identity do, "" when it is no escalation
// path (EscalationChecks, and impersonate-on:<mode>:<verb> on any
// resource): why and who-can print it.
func Escalation(verb, group, resource string) string {
	const constrained = "an escalation path (constrained impersonation: alpha in Kubernetes 1.35, on by default from " +
		"1.36): "
	if mode, onVerb, ok := ParseImpersonateOn(verb); ok {
		return fmt.Sprintf(constrained+"%s on this resource as an identity impersonated in the %s mode, which also "+
			"needs impersonate:%s on that identity", onVerb, mode, mode)
	}
	if len(checksFor(verb, group, resource)) == 0 {
		return ""
	}
	switch {
	case verb == "impersonate":
		return "an escalation path: impersonating acts with the permissions of the identity named (kubectl --as, " +
			"--as-group, --as-uid), on every verb and resource"
	case verb == "bind":
		return "an escalation path: binding a role grants its permissions to anyone, yourself included, even those " +
			"you do not hold"
	case verb == "escalate":
		return "an escalation path: creating or updating a role with permissions you do not hold"
	}
	return fmt.Sprintf(constrained+"acting as the identity named, for the verbs and resources an "+
		"impersonate-on:%s:VERB grants", strings.TrimPrefix(verb, "impersonate:"))
}

// ClusterScoped tells whether kube-apiserver asks t's verb on t's resource
// at cluster scope whatever the namespace of the request: an escalation
// check that is never a namespace's (EscalationChecks: impersonating users,
// groups, UIDs, extra and nodes, and escalating cluster roles; binding a
// ClusterRole is asked in a RoleBinding's namespace too). A RoleBinding
// never grants those, so why and who-can ask them without a namespace.
func ClusterScoped(t Target) bool {
	if t.NonResourceURL != "" {
		return false
	}
	checks := checksFor(t.Verb, t.Group, t.Resource)
	return len(checks) > 0 && !slices.ContainsFunc(checks, func(e EscalationCheck) bool { return e.Namespaced })
}
