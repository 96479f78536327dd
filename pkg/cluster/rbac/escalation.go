package rbac

import (
	"context"
	"fmt"
	"slices"
	"strings"

	authzv1 "k8s.io/api/authorization/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbaceval"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/resource"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/risk"
)

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

// checkAttributes are check c's attributes asked in ns.
func checkAttributes(c risk.EscalationCheck, ns string) authzv1.ResourceAttributes {
	if !c.Namespaced {
		ns = ""
	}
	return authzv1.ResourceAttributes{Namespace: ns, Verb: c.Verb, Group: c.Group, Resource: c.Resource,
		Subresource: c.Subresource, Name: c.Name}
}

// checkAnswer is check c's cell from p's rules. A rule for some keys of
// the extra only ("userextras/scopes", "*/scopes") grants some of it.
func checkAnswer(c risk.EscalationCheck, p *planner) Cell {
	res := c.Resource
	if c.Subresource != "" {
		res += "/" + c.Subresource
	}
	cell := p.fromRules(c.Group, res, c.Verb)
	if c.Resource == "userextras" && !cell.Allowed {
		for _, rule := range p.rules {
			if rbaceval.Matches(rule.Verbs, c.Verb) && rbaceval.Matches(rule.APIGroups, c.Group) &&
				slices.ContainsFunc(rule.Resources, func(r string) bool {
					return strings.HasPrefix(r, "userextras/") || strings.HasPrefix(r, "*/")
				}) {
				cell.Partial = true
			}
		}
	}
	return cell
}

func checkCell(c risk.EscalationCheck, ns string, cell Cell) EscalationCell {
	if !c.Namespaced {
		ns = ""
	}
	return EscalationCell{Verb: c.Verb, Resource: resource.Resource{Group: c.Group, Name: c.Resource}.String(),
		Subresource: c.Subresource,
		Namespace:   ns, Name: c.Name, Mode: c.Mode, Cell: cell}
}

// clusterPlanner is the planner of the cluster-scoped escalation checks.
// Without a rules review (p.ssar) every check
// is asked. A namespace's review (p) lists every ClusterRoleBinding's rules
// too, but its RoleBindings' as well, which grant nothing at cluster scope:
// when a complete one has no rule that could grant a cluster check, none
// does; otherwise the cluster's rules are reviewed (rbaceval.ClusterScopeNamespace).
// A failed review of them leaves every check to an access review.
func (c *Client) clusterPlanner(ctx context.Context, p *planner, local rbaceval.LocalRules) (*planner, error) {
	if p.ssar {
		return p, nil
	}
	if local != nil {
		rules, incomplete := local(rbaceval.ClusterScopeNamespace)
		return &planner{rules: rules, incomplete: incomplete, authoritative: true}, nil
	}
	if !p.incomplete && !slices.ContainsFunc(risk.EscalationChecks, func(e risk.EscalationCheck) bool {
		cell := checkAnswer(e, p)
		return !e.Namespaced && cell.Held()
	}) {
		return p, nil
	}
	rules, incomplete, err := c.RulesReview(ctx, rbaceval.ClusterScopeNamespace)
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
	for _, e := range risk.EscalationChecks {
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
		cell := checkAnswer(e, pl)
		if pl.ask(cell) {
			*jobs = append(*jobs,
				job{escalation: len(out), rules: cell.Allowed, incomplete: pl.incomplete,
					attrs: checkAttributes(e, namespace)})
		}
		out = append(out, checkCell(e, namespace, cell))
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
	for _, m := range risk.ImpersonationModes {
		if slices.ContainsFunc(cells, func(c EscalationCell) bool { return c.Mode == m && c.Held() }) {
			modes = append(modes, m)
		}
	}
	return modes
}
