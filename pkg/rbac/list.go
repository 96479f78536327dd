package rbac

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/kubeapi"
	authzv1 "k8s.io/api/authorization/v1"
)

// ResolveResource finds the resource typed names among all (discovery),
// as kubectl resolves a resource argument: its plural, singular, kind or a
// short name, optionally qualified by its group ("deployments.apps") or
// version and group ("deployments.v1.apps"). Several matches prefer the
// core group, as kubectl's RESTMapper does. An unknown name is an error
// that names the closest resource served.
func ResolveResource(all []Resource, typed string) (Resource, error) {
	name, group, hasGroup := strings.Cut(strings.ToLower(typed), ".")
	version := ""
	// As kubectl's schema.ParseResourceArg: two dots or more are
	// resource.version.group, one is resource.group ("pods.v1" is the
	// group "v1", which no server serves).
	if v, g, ok := strings.Cut(group, "."); ok && looksLikeVersion(v) {
		version, group = v, g
	}
	candidates := func(match func(Resource) bool) []Resource {
		var found []Resource
		for _, r := range all {
			if strings.Contains(r.Name, "/") || (hasGroup && r.Group != group) || (version != "" && r.Version != version) {
				continue
			}
			if match(r) {
				found = append(found, r)
			}
		}
		return found
	}
	// kubectl's order: the plural or singular name (the kind, lowercased,
	// where a server gives no singular), then short names; among several,
	// discovery's priority (the core group, then built-in groups before a
	// CRD's), so that a CRD cannot take a built-in's name.
	found := candidates(func(r Resource) bool {
		singular := r.SingularName
		if singular == "" {
			singular = strings.ToLower(r.Kind)
		}
		return r.Name == name || singular == name
	})
	if len(found) == 0 {
		found = candidates(func(r Resource) bool { return slices.Contains(r.ShortNames, name) })
	}
	if len(found) == 0 {
		msg := fmt.Sprintf("the server does not serve a resource %q", typed)
		if c := closest(all, name); c != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", c)
		}
		return Resource{}, fmt.Errorf("%s: see kubectl api-resources", msg)
	}
	return slices.MinFunc(found, func(a, b Resource) int { return a.Priority - b.Priority }), nil
}

// ResolveTarget resolves t's resource through discovery (all, subresources
// included), so that "get po", "get pod" and "get Pod" ask about pods as
// kubectl auth can-i does. Non-resource URLs, "*" and the impersonation
// resources (users, groups, uids, userextras; constrained impersonation's
// users, groups, serviceaccounts and nodes of authentication.k8s.io), which
// discovery does not list, are left as they are.
func ResolveTarget(all []Resource, t Target) (Target, error) {
	if t.NonResourceURL != "" || t.Resource == "*" ||
		(t.Group == "" && slices.Contains([]string{"users", "groups", "serviceaccounts/token"}, t.Resource)) ||
		(t.Group == ImpersonationGroup && slices.Contains([]string{"uids", "userextras", "users", "groups", "serviceaccounts", "nodes"}, t.Resource)) {
		return t, nil
	}
	typed := t.Resource
	if t.Group != "" {
		typed += "." + t.Group
	}
	r, err := ResolveResource(all, typed)
	if err != nil {
		return t, err
	}
	// The subresource is asked as typed, as kubectl auth can-i
	// --subresource asks it (RBAC rules may name one a server lacks).
	t.Resource, t.Group = r.Name, r.Group
	return t, nil
}

// looksLikeVersion is an API version: v1, v2beta1, v1alpha3.
func looksLikeVersion(s string) bool {
	rest, ok := strings.CutPrefix(s, "v")
	digits := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
	if !ok || digits == 0 || rest[0] == '0' {
		return false
	}
	rest = rest[digits:]
	if rest == "" {
		return true
	}
	for _, q := range []string{"alpha", "beta"} {
		if n, ok := strings.CutPrefix(rest, q); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			return true
		}
	}
	return false
}

// closest is the served resource name nearest to name (edit distance at
// most 2, or a prefix of at least 3 letters), "" when none is close.
func closest(all []Resource, name string) string {
	best, bestD := "", 3
	for _, r := range all {
		if strings.Contains(r.Name, "/") {
			continue
		}
		for _, cand := range append([]string{r.Name, r.SingularName, strings.ToLower(r.Kind)}, r.ShortNames...) {
			if cand == "" {
				continue
			}
			d := editDistance(name, cand)
			if len(name) >= 3 && strings.HasPrefix(cand, name) {
				d = min(d, 1)
			}
			if d < bestD {
				best, bestD = r.String(), d
			}
		}
	}
	return best
}

// editDistance is Levenshtein's distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// Object is one listed object: its metadata, and the whole object when
// asked for.
type Object struct {
	Namespace string            `json:"namespace,omitempty"`
	Name      string            `json:"name"`
	Created   time.Time         `json:"creationTimestamp"`
	Labels    map[string]string `json:"labels,omitempty"`
	Raw       json.RawMessage   `json:"-"`
}

// path is the collection URL of r in namespace ("" for every namespace or
// a cluster-scoped resource).
func (r Resource) path(namespace string) string {
	p := "/apis/" + r.Group + "/" + r.Version
	if r.Group == "" {
		p = "/api/" + r.Version
	}
	if r.Namespaced && namespace != "" {
		p += "/namespaces/" + url.PathEscape(namespace)
	}
	return p + "/" + r.Name
}

// APIVersion is group/version, or the version of the core group.
func (r Resource) APIVersion() string {
	if r.Group == "" {
		return r.Version
	}
	return r.Group + "/" + r.Version
}

// metadataOnly asks the API server for object metadata only (the
// PartialObjectMetadataList kubectl's garbage collector uses), falling back
// to whole objects from servers that cannot.
const metadataOnly = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"

// MaxObjects bounds the objects one list keeps, whatever its pages.
const MaxObjects = 500_000

// List lists r in namespace ("" for all namespaces) with a label
// selector, 500 at a time (kubectl's chunk size); full keeps each whole
// object in Raw.
func (c *Client) List(ctx context.Context, r Resource, namespace, selector string, full bool) ([]Object, error) {
	return c.list(ctx, r, namespace, selector, full, 500)
}

// list is List with limit objects a page, or all in one answer for 0.
func (c *Client) list(ctx context.Context, r Resource, namespace, selector string, full bool, limit int) ([]Object, error) {
	accept := metadataOnly
	if full {
		accept = "application/json"
	}
	var out []Object
	cont := ""
	for page := 0; ; page++ {
		q := url.Values{}
		if limit > 0 {
			q.Set("limit", strconv.Itoa(limit))
		}
		if selector != "" {
			q.Set("labelSelector", selector)
		}
		if cont != "" {
			q.Set("continue", cont)
		}
		var list listPage
		list.full = full
		if err := c.GetAs(ctx, r.path(namespace)+"?"+q.Encode(), accept, &list); err != nil {
			return nil, fmt.Errorf("listing %s%s: %w", r, inNamespace(namespace), err)
		}
		// kube-apiserver answers at most limit objects a page; an API server
		// that answers more, or more than MaxObjects in all, is refused
		// (what a list keeps is bounded: docs/security.md).
		if limit > 0 && len(list.Items) > limit {
			return nil, fmt.Errorf("listing %s%s: the API server answered %d objects for a page of at most %d", r, inNamespace(namespace), len(list.Items), limit)
		}
		if len(out)+len(list.Items) > MaxObjects {
			return nil, fmt.Errorf("listing %s%s: %w", r, inNamespace(namespace),
				kubeapi.TooLarge(fmt.Sprintf("more than %d objects, the limit for one list: narrow it (a namespace, a label selector)", MaxObjects)))
		}
		for _, item := range list.Items {
			obj := item.Metadata
			if err := kubeapi.CheckLabels(obj.Labels); err != nil {
				return nil, fmt.Errorf("listing %s%s: refusing the API server's answer: object %.64q: %w", r, inNamespace(namespace), obj.Name, err)
			}
			if full {
				typed, err := withTypeMeta(item.raw, r)
				if err != nil {
					return nil, err
				}
				obj.Raw = typed
			}
			out = append(out, obj)
		}
		cont = list.Metadata.Continue
		if cont == "" {
			return out, nil
		}
		if page >= 10000 {
			return nil, fmt.Errorf("listing %s: more than 10000 pages", r)
		}
	}
}

// listPage is one page of a list: its items' metadata, decoded straight
// from the answer (no copy of each item is kept unless full asks for the
// whole objects).
type listPage struct {
	full     bool
	Metadata struct {
		Continue string `json:"continue"`
	} `json:"metadata"`
	Items []listItem `json:"items"`
}

type listItem struct {
	Metadata Object `json:"metadata"`
	raw      json.RawMessage
}

// UnmarshalJSON decodes p, keeping each item's bytes when p.full.
func (p *listPage) UnmarshalJSON(b []byte) error {
	if !p.full {
		type plain listPage // without this method
		return json.Unmarshal(b, (*plain)(p))
	}
	var whole struct {
		Metadata struct {
			Continue string `json:"continue"`
		} `json:"metadata"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(b, &whole); err != nil {
		return err
	}
	p.Metadata.Continue = whole.Metadata.Continue
	p.Items = make([]listItem, len(whole.Items))
	for i, raw := range whole.Items {
		if err := json.Unmarshal(raw, &p.Items[i]); err != nil {
			return err
		}
		p.Items[i].raw = raw
	}
	return nil
}

// withTypeMeta sets kind and apiVersion, which list items lack.
func withTypeMeta(raw json.RawMessage, r Resource) (json.RawMessage, error) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", r, err)
	}
	m["kind"], m["apiVersion"] = r.Kind, r.APIVersion()
	return json.Marshal(m)
}

func inNamespace(ns string) string {
	if ns == "" {
		return ""
	}
	return " in namespace " + ns
}

// NamespacesWith lists the namespaces matching a label selector: their
// metadata, in one request (as the RBAC objects are read: a thousand
// namespaces' metadata is some 300 kB, and pages of 500 would make it
// three requests).
func (c *Client) NamespacesWith(ctx context.Context, selector string) ([]string, error) {
	objs, err := c.list(ctx, Resource{Version: "v1", Name: "namespaces"}, "", selector, false, 0)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(objs))
	for i, o := range objs {
		names[i] = o.Name
	}
	return names, nil
}

// ObjectAllowed tells whether a rule grants verb on the object name of
// resource: a rule without resourceNames grants every object, one with
// resourceNames only those it names.
func ObjectAllowed(rule authzv1.ResourceRule, group, resource, name, verb string) bool {
	allowed, partial := RuleAllows(rule, group, resource, verb)
	return allowed || (partial && slices.Contains(rule.ResourceNames, name))
}

// namespaceRules fills rules and incomplete for each namespace: from
// o.LocalRules, or with one rules review per namespace, rulesConcurrency at
// a time.
func (c *Client) namespaceRules(ctx context.Context, namespaces []string, o FilterOptions, rules map[string][]authzv1.ResourceRule, incomplete map[string]bool, st *FilterStats) error {
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
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(rulesConcurrency)
		for _, ns := range namespaces {
			if gctx.Err() != nil {
				break // a review failed, or Ctrl-C: no more are sent
			}
			g.Go(func() error {
				rs, inc, err := c.rulesReview(gctx, ns)
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
		st.RulesReviews = len(rules)
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
	Object
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
	LocalRules LocalRules
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
func (c *Client) Filter(ctx context.Context, r Resource, objs []Object, o FilterOptions) ([]Decision, FilterStats, error) {
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
	type job struct {
		obj  int
		verb string
		// rules is what the namespace's rules said of it.
		rules bool
	}
	decisions := make([]Decision, len(objs))
	var jobs []job
	for i, obj := range objs {
		d := Decision{Object: obj, Source: FromRules, Denied: map[string]string{}}
		for _, v := range o.Verbs {
			allowed, named := false, false
			for _, rule := range rules[obj.Namespace] {
				allowed = allowed || ObjectAllowed(rule, r.Group, r.Name, obj.Name, v)
				if _, partial := RuleAllows(rule, r.Group, r.Name, v); partial {
					named = true
				}
			}
			switch {
			case o.ForceSSAR || !r.Namespaced || incomplete[obj.Namespace]:
				// An incomplete review cannot be trusted either way (a
				// webhook before RBAC may deny what RBAC allows).
				jobs = append(jobs, job{obj: i, verb: v, rules: allowed})
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
	attrs := make([]authzv1.ResourceAttributes, len(jobs))
	for k, j := range jobs {
		obj := objs[j.obj]
		attrs[k] = authzv1.ResourceAttributes{Namespace: obj.Namespace, Verb: j.verb, Group: r.Group, Resource: r.Name, Name: obj.Name}
	}
	n, err := c.accessReviews(ctx, attrs, o.Concurrency, func(k int, out authzv1.SubjectAccessReviewStatus) {
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
	st.AccessReviews = n
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
