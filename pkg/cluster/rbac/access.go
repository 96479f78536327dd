package rbac

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	authzv1 "k8s.io/api/authorization/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/kubeapi"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbaceval"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/resource"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/risk"
)

// DefaultVerbs are the columns of the access matrix.
var DefaultVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

// Source says how an answer was settled; its values are the -o json
// "source" fields and --method's.
type Source string

const (
	// FromRules: settled by a (Self)SubjectRulesReview.
	FromRules Source = "rules"
	// FromAccessReview: asked with a (Self)SubjectAccessReview.
	FromAccessReview Source = "ssar"
	// NotApplicable: the resource has no such verb.
	NotApplicable Source = "n/a"
)

// Methods are --method's values: rules (a rules review, then access reviews
// where needed) or ssar (one access review per cell).
var Methods = []Source{FromRules, FromAccessReview}

// Cell is one answer of the matrix.
type Cell struct {
	Allowed bool `json:"allowed"`
	// Source is how the answer was settled.
	Source Source `json:"source"`
	// Partial: allowed for some resourceNames only.
	Partial bool `json:"partial,omitempty"`
	// DecidedElsewhere: the access review answered otherwise than the
	// RBAC rules the rules review listed, in a namespace whose review says
	// incomplete: an authorizer other than RBAC (a webhook) decided.
	DecidedElsewhere bool `json:"decidedElsewhere,omitempty"`
}

// Held tells whether the cell allows, for some resourceNames at least.
func (c Cell) Held() bool { return c.Allowed || c.Partial }

// Row is a resource and its cells by verb.
type Row struct {
	Resource string          `json:"resource"`
	Cells    map[string]Cell `json:"verbs"`
}

// Held tells whether a cell of verbs is held (Cell.Held).
func (r Row) Held(verbs []string) bool {
	return slices.ContainsFunc(verbs, func(v string) bool { return r.Cells[v].Held() })
}

// Matrix is the access matrix of one namespace ("" for cluster scope).
type Matrix struct {
	Namespace string   `json:"namespace,omitempty"`
	Verbs     []string `json:"columns"`
	Rows      []Row    `json:"rows"`
	// Requests counts the API requests after discovery.
	Requests int `json:"requests"`
	// Incomplete is the rules review's word that it could not list everything.
	Incomplete bool `json:"rulesIncomplete"`
	// RulesFrom says where the rules came from: RulesFromObjects (the RBAC
	// objects, evaluated here), or "" (a rules review, or none).
	RulesFrom string `json:"rulesFrom,omitempty"`
	// Streaming says, by kubectl command, whether exec, attach and
	// port-forward work (with subresources): since Kubernetes 1.35 they go
	// over WebSockets and need get and create on the subresource.
	Streaming map[string]bool `json:"streaming,omitempty"`
	// Risks are the cells held (for some names at least) that are risks
	// (risk.Of), in the rows' order.
	Risks []RiskCell `json:"risks,omitempty"`
	// Escalation answers the escalation checks (EscalationChecks): the
	// cluster's, and the namespace's for a namespace's matrix.
	Escalation []EscalationCell `json:"escalation,omitempty"`
	// ImpersonateOn holds, for each constrained impersonation mode the
	// identity holds (impersonate:<mode>), the rows' cells asked as
	// impersonate-on:<mode>:<verb>: what it may do as an identity it
	// impersonates in that mode.
	ImpersonateOn map[string][]Row `json:"impersonateOn,omitempty"`
	// Sudo is the sudo grant the matrix was asked under (the identity's
	// impersonation named it) while it counts: the cells until its end.
	Sudo *elevation.Note `json:"sudo,omitempty"`
}

// RulesFromObjects is Matrix.RulesFrom for rules evaluated from the RBAC
// objects (RBAC.RulesFor) instead of a rules review.
const RulesFromObjects = "rbac-objects"

// setStreaming fills m.Streaming from its rows: a command works with get
// and create allowed on its subresource.
func (m *Matrix) setStreaming() {
	if !slices.Contains(m.Verbs, "get") || !slices.Contains(m.Verbs, "create") {
		return
	}
	for _, r := range m.Rows {
		if command := risk.StreamingCommand(r.Resource); command != "" {
			if m.Streaming == nil {
				m.Streaming = map[string]bool{}
			}
			m.Streaming[command] = r.Cells["get"].Allowed && r.Cells["create"].Allowed
		}
	}
}

// AccessOptions configure Access.
type AccessOptions struct {
	Namespace string
	Verbs     []string
	// ForceSSAR asks one SelfSubjectAccessReview per cell (the truth the
	// rules are checked against in tests).
	ForceSSAR   bool
	Concurrency int
	// Progress, when set, is told how many access reviews of the
	// namespace's matrix are done of how many (for the command's progress
	// line on a terminal).
	Progress func(namespace string, done, total int)
	// Escalation adds the escalation section: the cluster's checks (or
	// ClusterEscalation, from an earlier matrix of the run), the namespace's,
	// and the impersonate-on cells of the constrained modes held.
	Escalation        bool
	ClusterEscalation []EscalationCell
	// LocalRules, when set, answers the rules reviews (of the namespace,
	// and of the cluster's rules for the escalation checks) from the RBAC
	// objects instead of asking the server (access -A when RBAC is the
	// only authorizer and its objects are readable).
	LocalRules rbaceval.LocalRules
	// MaxReviews bounds the access reviews of this matrix (0: no bound,
	// negative: none may be sent): with an authorizer besides RBAC every
	// cell is one, and a caller asking about many namespaces passes what is
	// left of its budget.
	MaxReviews int
	// Budget, when set, replaces MaxReviews: the run's, shared by the
	// matrices built at the same time (ReviewBudget).
	Budget *ReviewBudget
}

// ErrTooManyReviews is Access's refusal to send more than MaxReviews.
var ErrTooManyReviews = errors.New("too many access reviews")

// Access builds the matrix of resources: one SelfSubjectRulesReview, then a
// SelfSubjectAccessReview only for the cells the review leaves open (it
// says incomplete, or grants for some resourceNames only). With
// o.Escalation it also answers the escalation checks, and, for each
// constrained impersonation mode the identity holds, the
// impersonate-on:<mode>:<verb> cells of the same rows and columns. Every
// access review it may send is counted against o.MaxReviews before the
// first is sent.
func (c *Client) Access(ctx context.Context, resources []resource.Resource, o AccessOptions) (*Matrix, error) {
	verbs := o.Verbs
	if len(verbs) == 0 {
		verbs = DefaultVerbs
	}
	m := &Matrix{Namespace: o.Namespace, Verbs: verbs}
	ctx, count := kubeapi.CountRequests(ctx)
	p, err := c.newPlanner(ctx, m, o)
	if err != nil {
		return nil, err
	}
	var jobs []job
	m.Rows = p.rows(resources, verbs, o.Namespace, "", &jobs)
	if o.Escalation {
		cluster := o.ClusterEscalation
		var cp *planner
		if cluster == nil {
			if cp, err = c.clusterPlanner(ctx, p, o.LocalRules); err != nil {
				return nil, err
			}
		}
		m.Escalation = escalationCells(p, cp, o.Namespace, cluster, &jobs)
	}
	modes := p.modeRows(m, resources, o, jobs)
	reserved, err := reserve(o, jobs, modes)
	if err != nil {
		return nil, err
	}
	if err := c.answer(ctx, m, jobs, o); err != nil {
		return nil, err
	}
	if o.Escalation {
		// The impersonate-on rows of the modes held, asked now.
		jobs = nil
		for _, mode := range grantedModes(m.Escalation) {
			if m.ImpersonateOn == nil {
				m.ImpersonateOn = map[string][]Row{}
			}
			m.ImpersonateOn[mode] = modes[mode].rows
			jobs = append(jobs, modes[mode].jobs...)
		}
		if err := c.answer(ctx, m, jobs, o); err != nil {
			return nil, err
		}
	}
	m.Requests = count.N()
	if o.Budget != nil {
		o.Budget.Spent(m.Requests - reserved)
	}
	m.setStreaming()
	m.SetRisks()
	return m, nil
}

// RiskCell is a cell held that is a risk.
type RiskCell struct {
	Verb string `json:"verb"`
	// Resource is the row's: resource[/subresource][.group].
	Resource string `json:"resource"`
	risk.Risk
}

// SetRisks fills m.Risks from its rows (Access does).
func (m *Matrix) SetRisks() {
	m.Risks = nil
	for _, r := range m.Rows {
		res, group, _ := strings.Cut(r.Resource, ".")
		for _, v := range m.Verbs {
			if !r.Cells[v].Held() {
				continue
			}
			if rk := risk.Of(v, group, res); rk.Risky() {
				m.Risks = append(m.Risks, RiskCell{Verb: v, Resource: r.Resource, Risk: rk})
			}
		}
	}
}

// newPlanner is the planner of m's cells: from access reviews alone
// (ForceSSAR), the RBAC objects read once, or a rules review (one
// request).
func (c *Client) newPlanner(ctx context.Context, m *Matrix, o AccessOptions) (*planner, error) {
	p := &planner{ssar: o.ForceSSAR}
	switch {
	case o.ForceSSAR:
	case o.LocalRules != nil:
		p.rules, p.incomplete = o.LocalRules(o.Namespace)
		p.authoritative = true
		m.Incomplete, m.RulesFrom = p.incomplete, RulesFromObjects
	default:
		var err error
		if p.rules, p.incomplete, err = c.RulesReview(ctx, o.Namespace); err != nil {
			return nil, fmt.Errorf("reviewing your rules in %q: %w", o.Namespace, err)
		}
		m.Incomplete = p.incomplete
	}
	return p, nil
}

// modePlan is the impersonate-on rows of one constrained mode and the
// access reviews they need.
type modePlan struct {
	rows []Row
	jobs []job
}

// modeRows plans the impersonate-on rows of every mode that may turn out
// held, so that the budget counts them; only the held ones are kept and
// asked.
func (p *planner) modeRows(m *Matrix, resources []resource.Resource, o AccessOptions, jobs []job) map[string]modePlan {
	modes := map[string]modePlan{}
	if !o.Escalation {
		return modes
	}
	for _, mode := range risk.ImpersonationModes {
		if maybeHeld(m.Escalation, jobs, mode) {
			var mp modePlan
			mp.rows = p.rows(resources, m.Verbs, o.Namespace, mode, &mp.jobs)
			modes[mode] = mp
		}
	}
	return modes
}

// reserve takes the access reviews the matrix may need from
// --max-reviews, before any is sent: the number taken.
func reserve(o AccessOptions, jobs []job, modes map[string]modePlan) (int, error) {
	budget := len(jobs)
	for _, mp := range modes {
		budget += len(mp.jobs)
	}
	left, ok := max(o.MaxReviews, 0), o.MaxReviews == 0 || budget <= max(o.MaxReviews, 0)
	if o.Budget != nil {
		left, ok = o.Budget.Reserve(budget)
	}
	if !ok {
		return 0, fmt.Errorf("%w: the matrix%s may need %d, over the %d left (with an authorizer besides RBAC, such "+
			"as a webhook, the rules review is incomplete and every cell is asked)",
			ErrTooManyReviews, resource.InNamespace(o.Namespace), budget, left)
	}
	return budget, nil
}

// answer sends jobs' access reviews and writes their answers into m.
func (c *Client) answer(ctx context.Context, m *Matrix, jobs []job, o AccessOptions) error {
	if len(jobs) == 0 {
		return nil
	}
	attrs := make([]authzv1.ResourceAttributes, len(jobs))
	for k, j := range jobs {
		attrs[k] = j.attrs
	}
	done := 0
	err := c.AccessReviews(ctx, attrs, o.Concurrency, func(k int, st authzv1.SubjectAccessReviewStatus) {
		j := jobs[k]
		// The rules' cell, answered: its "some names only" is kept.
		var cell Cell
		switch {
		case j.escalation >= 0:
			cell = m.Escalation[j.escalation].Cell
		case j.mode != "":
			cell = m.ImpersonateOn[j.mode][j.row].Cells[j.verb]
		default:
			cell = m.Rows[j.row].Cells[j.verb]
		}
		cell.Allowed, cell.Source = st.Allowed, FromAccessReview
		cell.DecidedElsewhere = j.incomplete && st.Allowed != j.rules
		switch {
		case j.escalation >= 0:
			m.Escalation[j.escalation].Cell = cell
		case j.mode != "":
			m.ImpersonateOn[j.mode][j.row].Cells[j.verb] = cell
		default:
			m.Rows[j.row].Cells[j.verb] = cell
		}
		done++
		if o.Progress != nil {
			o.Progress(o.Namespace, done, len(jobs))
		}
	})
	if err != nil {
		return fmt.Errorf("checking access: %w", err)
	}
	return nil
}

// planner answers cells from a rules review, and lists the access reviews
// the others need.
type planner struct {
	rules []authzv1.ResourceRule
	// incomplete: the review said so (another authorizer in the chain).
	incomplete bool
	// ssar: no rules review, every cell is asked.
	ssar bool
	// authoritative: the rules are RBAC's, RBAC the only authorizer
	// (access -A's local evaluation, checked against a rules review), so a
	// grant for some names only is no grant of the verb: RBAC matches
	// resourceNames only against a name, and the cell asks without one.
	authoritative bool
}

// ask tells whether a cell, as the rules answer it, is asked again: every
// cell without a review or with an incomplete one (a webhook before RBAC
// may deny what RBAC allows), and grants for some names only.
func (p *planner) ask(cell Cell) bool {
	return p.ssar || p.incomplete || (!cell.Allowed && cell.Partial && !p.authoritative)
}

// job is one access review of the matrix: a cell of a row (of the matrix,
// or of mode's impersonate-on rows), or an escalation cell.
type job struct {
	row        int
	verb       string
	mode       string
	escalation int
	attrs      authzv1.ResourceAttributes
	// rules is what the rules review said of the cell; incomplete, that
	// the review said it was incomplete (an answer against rules is then
	// another authorizer's).
	rules, incomplete bool
}

// fromRules is the cell the rules give verb on resource (resource/sub).
func (p *planner) fromRules(group, resource, verb string) Cell {
	cell := Cell{Source: FromRules}
	for _, rule := range p.rules {
		a, partial := rbaceval.RuleAllows(rule, group, resource, verb)
		cell.Allowed = cell.Allowed || a
		cell.Partial = cell.Partial || partial
	}
	return cell
}

// rows answers resources × verbs in namespace from the rules, the verbs
// asked as impersonate-on:<mode>:<verb> when mode is set, adding the
// access reviews needed to jobs.
func (p *planner) rows(resources []resource.Resource, verbs []string, namespace, mode string, jobs *[]job) []Row {
	var out []Row
	for i, r := range resources {
		row := Row{Resource: r.String(), Cells: map[string]Cell{}}
		for _, v := range verbs {
			if !slices.Contains(r.Verbs, v) {
				row.Cells[v] = Cell{Source: NotApplicable}
				continue
			}
			asked := v
			if mode != "" {
				asked = risk.ImpersonateOnVerb(mode, v)
			}
			cell := p.fromRules(r.Group, r.Name, asked)
			if p.ask(cell) {
				name, sub, _ := strings.Cut(r.Name, "/")
				ns := namespace
				if !r.Namespaced {
					ns = ""
				}
				*jobs = append(*jobs,
					job{row: i, verb: v, mode: mode, escalation: -1, rules: cell.Allowed, incomplete: p.incomplete,
						attrs: authzv1.ResourceAttributes{Namespace: ns, Verb: asked, Group: r.Group, Resource: name,
							Subresource: sub}})
			}
			row.Cells[v] = cell
		}
		out = append(out, row)
	}
	return out
}
