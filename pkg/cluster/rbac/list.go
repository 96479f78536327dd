package rbac

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"
	authzv1 "k8s.io/api/authorization/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/kubeapi"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbaceval"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/resource"
)

// namespaceRules fills rules and incomplete for each namespace: from
// o.LocalRules, or with one rules review per namespace, rulesConcurrency at
// a time.
func (c *Client) namespaceRules(ctx context.Context, namespaces []string, o FilterOptions,
	rules map[string][]authzv1.ResourceRule, incomplete map[string]bool, st *FilterStats) error {
	var mu sync.Mutex
	set := func(ns string, rs []authzv1.ResourceRule, inc bool) {
		mu.Lock()
		defer mu.Unlock()
		rules[ns] = rs
		if inc {
			incomplete[ns] = true
		}
		if o.Progress != nil {
			o.Progress(len(rules), len(namespaces))
		}
	}
	if o.LocalRules != nil {
		for _, ns := range namespaces {
			rs, inc := o.LocalRules(ns)
			set(ns, rs, inc)
		}
		st.FromRBACObjects = len(namespaces)
	} else {
		ctx, count := kubeapi.CountRequests(ctx)
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(rulesConcurrency)
		for _, ns := range namespaces {
			if gctx.Err() != nil {
				break // a review failed, or Ctrl-C: no more are sent
			}
			g.Go(func() error {
				rs, inc, err := c.RulesReview(gctx, ns)
				if err != nil {
					return fmt.Errorf("reviewing the rules in namespace %s: %w", ns, err)
				}
				set(ns, rs, inc)
				return nil
			})
		}
		err := g.Wait()
		if err == nil {
			err = ctx.Err() // cancelled before every review was sent
		}
		st.RulesReviews = count.N()
		if err != nil {
			return err
		}
	}
	for _, ns := range namespaces {
		if incomplete[ns] {
			st.Incomplete = append(st.Incomplete, ns)
		}
	}
	return nil
}

// Decision is what an identity may do with one object.
type Decision struct {
	resource.Object
	Allowed []string `json:"allowedVerbs"`
	// Denied holds, per verb not allowed, why.
	Denied map[string]string `json:"deniedVerbs,omitempty"`
	// Source is FromRules (settled by the rules review) or
	// FromAccessReview (at least one verb asked with an access review).
	Source Source `json:"source"`
	// DecidedElsewhere lists the verbs whose access review answered
	// against RBAC's rules, in a namespace whose review says incomplete:
	// an authorizer other than RBAC (a webhook) decided them.
	DecidedElsewhere []string `json:"decidedElsewhere,omitempty"`
}

// FilterStats counts the requests Filter made.
type FilterStats struct {
	RulesReviews  int `json:"selfSubjectRulesReviews"`
	AccessReviews int `json:"selfSubjectAccessReviews"`
	// FromRBACObjects counts the namespaces whose rules came from the RBAC
	// objects (FilterOptions.LocalRules) instead of a rules review.
	FromRBACObjects int `json:"namespacesFromRBACObjects,omitempty"`
	// Incomplete lists the namespaces whose rules review said incomplete.
	Incomplete []string `json:"rulesIncomplete,omitempty"`
}

// FilterOptions configure Filter.
type FilterOptions struct {
	Verbs []string
	// ForceSSAR asks an access review per object and verb (what the
	// rules are checked against in tests).
	ForceSSAR   bool
	Concurrency int
	// LocalRules, when set, answers the rules reviews from the RBAC
	// objects (read once, checked against the server by the caller)
	// instead of one SelfSubjectRulesReview per namespace.
	LocalRules rbaceval.LocalRules
	// Progress, when set, is told how many of the namespaces' rules
	// reviews have been answered.
	Progress func(done, total int)
}

// rulesConcurrency is how many namespaces' rules reviews Filter asks at
// a time, as access -A (kubectl's client-side rate limit, 5 QPS with a
// burst of 10, is not set on these clients: the server's priority and
// fairness shapes them).
const rulesConcurrency = 16

// Filter decides, as the client's identity, which verbs it may use on
// each object: one SelfSubjectRulesReview per namespace, rules matched
// locally with their resourceNames, and a SelfSubjectAccessReview only for
// the verbs the review cannot settle (incomplete, or a cluster-scoped
// resource, for which the review is namespace-bound).
func (c *Client) Filter(
	ctx context.Context, r resource.Resource, objs []resource.Object, o FilterOptions,
) ([]Decision, FilterStats, error) {
	var st FilterStats
	rules := map[string][]authzv1.ResourceRule{}
	incomplete := map[string]bool{}
	if r.Namespaced && !o.ForceSSAR {
		var namespaces []string
		seen := map[string]bool{}
		for _, obj := range objs {
			if !seen[obj.Namespace] {
				seen[obj.Namespace] = true
				namespaces = append(namespaces, obj.Namespace)
			}
		}
		if err := c.namespaceRules(ctx, namespaces, o, rules, incomplete, &st); err != nil {
			return nil, st, err
		}
	}
	decisions, jobs := fromRules(r, objs, o, rules, incomplete)
	attrs := make([]authzv1.ResourceAttributes, len(jobs))
	for k, j := range jobs {
		obj := objs[j.obj]
		attrs[k] = authzv1.ResourceAttributes{Namespace: obj.Namespace, Verb: j.verb, Group: r.Group, Resource: r.Name,
			Name: obj.Name}
	}
	reviews, count := kubeapi.CountRequests(ctx)
	err := c.AccessReviews(reviews, attrs, o.Concurrency, func(k int, out authzv1.SubjectAccessReviewStatus) {
		j := jobs[k]
		d := &decisions[j.obj]
		d.Source = FromAccessReview
		if incomplete[d.Namespace] && out.Allowed != j.rules {
			d.DecidedElsewhere = append(d.DecidedElsewhere, j.verb)
		}
		if out.Allowed {
			d.Allowed = append(d.Allowed, j.verb)
			return
		}
		reason := out.Reason
		if reason == "" {
			reason = "the access review denies it"
		}
		d.Denied[j.verb] = reason
	})
	st.AccessReviews = count.N()
	if err != nil {
		return nil, st, err
	}
	for i := range decisions {
		d := &decisions[i]
		// Verbs in the order asked, whichever answered first.
		slices.SortFunc(d.Allowed, func(a, b string) int { return slices.Index(o.Verbs, a) - slices.Index(o.Verbs, b) })
		if len(d.Denied) == 0 {
			d.Denied = nil
		}
	}
	return decisions, st, nil
}

// objectJob is one object's verb an access review decides; rules is what
// the namespace's rules said of it.
type objectJob struct {
	obj   int
	verb  string
	rules bool
}

// fromRules decides what the namespaces' rules settle, and returns the
// rest as access reviews to ask: everything with ForceSSAR, a
// cluster-scoped resource's verbs (the review is namespace-bound), and an
// incomplete review's (a webhook before RBAC may deny what RBAC allows).
func fromRules(r resource.Resource, objs []resource.Object, o FilterOptions, rules map[string][]authzv1.ResourceRule,
	incomplete map[string]bool) ([]Decision, []objectJob) {
	decisions := make([]Decision, len(objs))
	var jobs []objectJob
	for i, obj := range objs {
		d := Decision{Object: obj, Source: FromRules, Denied: map[string]string{}}
		for _, v := range o.Verbs {
			allowed, named := false, false
			for _, rule := range rules[obj.Namespace] {
				allowed = allowed || rbaceval.ObjectAllowed(rule, r.Group, r.Name, obj.Name, v)
				if _, partial := rbaceval.RuleAllows(rule, r.Group, r.Name, v); partial {
					named = true
				}
			}
			switch {
			case o.ForceSSAR || !r.Namespaced || incomplete[obj.Namespace]:
				jobs = append(jobs, objectJob{obj: i, verb: v, rules: allowed})
			case allowed:
				d.Allowed = append(d.Allowed, v)
			case named:
				d.Denied[v] = fmt.Sprintf("%s is granted for other resourceNames only", v)
			default:
				d.Denied[v] = fmt.Sprintf("no rule grants %s on %s", v, r)
			}
		}
		decisions[i] = d
	}
	return decisions, jobs
}
