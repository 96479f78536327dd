package rolegen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/component-helpers/auth/rbac/validation"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/auditlog"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/risk"
)

// The oracle is Kubernetes' own rule comparison (k8s.io/component-helpers
// auth/rbac/validation.Covers, the check kube-apiserver's RBAC registry
// makes before it lets a role be created or bound: do these rules grant
// everything those grant?), asked of the rules an identity would hold
// from the generated objects: the ClusterRole's everywhere, a Role's in
// its namespace. A cell is one request as the authorizer sees it, made a
// rule of one verb, one resource and (when named) one name.

// held is the rules the generated objects give in namespace ns ("" for
// cluster scope).
func held(p Policy, ns string) []rbacv1.PolicyRule {
	var rules []rbacv1.PolicyRule
	if p.ClusterRole != nil {
		rules = append(rules, p.ClusterRole.Rules...)
	}
	for _, r := range p.Roles {
		if ns != "" && r.Namespace == ns {
			rules = append(rules, r.Rules...)
		}
	}
	return rules
}

// cellRule is r as a rule of one cell.
func cellRule(r auditlog.Request) rbacv1.PolicyRule {
	if r.Resource == "" {
		return rbacv1.PolicyRule{Verbs: []string{r.Verb}, NonResourceURLs: []string{r.Path}}
	}
	rule := rbacv1.PolicyRule{Verbs: []string{r.Verb}, APIGroups: []string{r.APIGroup},
		Resources: []string{r.ResourceWithSub()}}
	if r.Name != "" {
		rule.ResourceNames = []string{r.Name}
	}
	return rule
}

// allows asks the oracle whether p's objects allow r.
func allows(p Policy, r auditlog.Request) bool {
	ns := r.Namespace
	if r.Resource != "" && risk.ClusterScoped(r.Verb, r.APIGroup, r.Resource) {
		ns = ""
	}
	ok, _ := validation.Covers(held(p, ns), []rbacv1.PolicyRule{cellRule(r)})
	return ok
}

// cellKey is a request's cell with its name: what the oracle is asked
// (no namespace for a check kube-apiserver asks at cluster scope).
func cellKey(r auditlog.Request) string {
	ns := r.Namespace
	if r.Resource != "" && risk.ClusterScoped(r.Verb, r.APIGroup, r.Resource) {
		ns = ""
	}
	return strings.Join([]string{ns, r.Verb, r.APIGroup, r.ResourceWithSub(), r.Name, r.Path}, "|")
}

// randomUse is a use drawn from small pools (so that cells repeat, are
// refused once and allowed another time, share names and namespaces),
// every decision among them.
func randomUse(rng *rand.Rand, n int) []auditlog.Request {
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	targets := []struct{ group, resource, sub string }{
		{"", "pods", ""}, {"", "pods", "log"}, {"", "pods", "exec"}, {"", "configmaps", ""}, {"", "secrets", ""},
		{"apps", "deployments", ""}, {"apps", "deployments", "scale"}, {"", "nodes", ""}, {"", "namespaces", ""},
		{"rbac.authorization.k8s.io", "clusterroles", ""}, {"", "users", ""},
	}
	verbs := []string{"get", "list", "watch", "create", "update", "patch", "delete", "impersonate", "bind"}
	decisions := []auditlog.Decision{auditlog.Allow, auditlog.Allow, auditlog.Forbid, auditlog.Undecided}
	var out []auditlog.Request
	for range n {
		t := targets[rng.IntN(len(targets))]
		r := auditlog.Request{Verb: pick(verbs), APIGroup: t.group, Resource: t.resource, Subresource: t.sub,
			Decision: decisions[rng.IntN(len(decisions))], Code: []int{200, 101, 404}[rng.IntN(3)]}
		// Impersonating users is asked at cluster scope: a log that says a
		// namespace must not put it in a Role, which could not grant it.
		if t.resource != "nodes" && t.resource != "namespaces" && t.resource != "clusterroles" {
			r.Namespace = pick([]string{"a", "b", "c"})
		}
		if r.Verb != "list" && r.Verb != "watch" && r.Verb != "create" && rng.IntN(4) > 0 {
			r.Name = pick([]string{"one", "two", "three", "four"})
		}
		if rng.IntN(12) == 0 {
			r = auditlog.Request{Verb: pick([]string{"get", "post"}), Path: pick([]string{"/metrics", "/logs", "/api"}),
				Decision: decisions[rng.IntN(len(decisions))], Code: 200}
		}
		out = append(out, r)
	}
	return out
}

// TestOracleAllowsExactlyTheUse: over random uses, the generated objects
// allow every cell the cluster allowed, and refuse every cell it refused
// or did not decide that it never allowed, and the neighbours of the
// cells used (another verb, another namespace, another name, another
// resource) unless those were used: as Kubernetes' own comparison says.
func TestOracleAllowsExactlyTheUse(t *testing.T) {
	rng := rand.New(rand.NewPCG(56, 1))
	checked := map[string]int{}
	for round := range 300 {
		use := randomUse(rng, 1+rng.IntN(30))
		p := Generate(use, PolicyOptions{MaxNames: 3})
		allowed := map[string]bool{}
		// What the cluster allowed, and what the rules grant on purpose
		// beyond it: a streaming subresource's other verb, every name when
		// more than MaxNames or none were named.
		named := map[string]map[string]bool{}
		for _, r := range use {
			if r.Decision != auditlog.Allow || discoveryPath(r.Verb, r.Path) && r.Resource == "" {
				continue
			}
			pair := []auditlog.Request{r}
			if upgradedGet(r) {
				o := r
				o.Verb = "create"
				pair = append(pair, o)
			}
			for _, c := range pair {
				allowed[cellKey(c)] = true
				w := c
				w.Name = ""
				if named[cellKey(w)] == nil {
					named[cellKey(w)] = map[string]bool{}
				}
				named[cellKey(w)][c.Name] = true
			}
		}
		widened := map[string]bool{}
		for k, ns := range named {
			widened[k] = ns[""] || len(ns) > 3
		}
		for _, r := range use {
			switch {
			case r.Decision == auditlog.Allow && !(r.Resource == "" && discoveryPath(r.Verb, r.Path)):
				assert.True(t, allows(p, r), "round %d: the allowed %s is not allowed by %s", round, cellKey(r),
					dump(p))
				checked["allowed"]++
				if upgradedGet(r) {
					o := r
					o.Verb = "create"
					assert.True(t, allows(p, o), "round %d: %s was asked create too (1.35+ WebSockets)", round,
						cellKey(r))
				}
			case !allowed[cellKey(r)] && !widened[cellKey(auditlog.Request{Namespace: r.Namespace, Verb: r.Verb,
				APIGroup: r.APIGroup, Resource: r.Resource, Subresource: r.Subresource, Path: r.Path})]:
				assert.False(t, allows(p, r), "round %d: the %s %s is allowed by %s", round, decisionName(r),
					cellKey(r), dump(p))
				checked["not allowed"]++
			}
			// Neighbours: what no request of the use was.
			for _, n := range neighbours(r) {
				if allowed[cellKey(n)] || widened[cellKey(auditlog.Request{Namespace: n.Namespace, Verb: n.Verb,
					APIGroup: n.APIGroup, Resource: n.Resource, Subresource: n.Subresource, Path: n.Path})] {
					continue
				}
				assert.False(t, allows(p, n), "round %d: the neighbour %s of %s is allowed by %s", round,
					cellKey(n), cellKey(r), dump(p))
				checked["neighbour"]++
			}
		}
	}
	t.Logf("cells checked: %v", checked)
	for _, k := range []string{"allowed", "not allowed", "neighbour"} {
		assert.Greater(t, checked[k], 100, "the rounds exercised %s cells", k)
	}
}

// upgradedGet is a WebSocket exec, attach or port-forward kube-apiserver
// switched protocols for (101): since 1.35 it asked create as well as get.
func upgradedGet(r auditlog.Request) bool {
	return r.Code == 101 && r.Verb == "get" && r.APIGroup == "" && r.Resource == "pods" &&
		slices.Contains([]string{"exec", "attach", "portforward"}, r.Subresource)
}

func decisionName(r auditlog.Request) string {
	if r.Decision == auditlog.Undecided {
		return "undecided"
	}
	return string(r.Decision)
}

// neighbours are the cells next to r: another verb, namespace, name or
// resource.
func neighbours(r auditlog.Request) []auditlog.Request {
	var out []auditlog.Request
	for _, v := range []string{"get", "delete", "escalate", "deletecollection"} {
		if v != r.Verb {
			n := r
			n.Verb = v
			out = append(out, n)
		}
	}
	if r.Namespace != "" {
		n := r
		n.Namespace = "elsewhere"
		out = append(out, n)
	}
	if r.Name != "" {
		n := r
		n.Name = "other"
		out = append(out, n)
	}
	if r.Resource != "" {
		n := r
		n.Resource = "widgets"
		out = append(out, n)
	} else {
		n := r
		n.Path = "/other"
		out = append(out, n)
	}
	return out
}

func dump(p Policy) string {
	b, _ := json.Marshal(struct {
		C any `json:"clusterRole"`
		R any `json:"roles"`
	}{p.ClusterRole, p.Roles})
	return string(b)
}

// FuzzGenerateGrantsOnlyWhatWasAllowed: whatever a log holds (a recording
// or an audit log written by the identity profiled), no generated rule
// grants a cell no allowed request of it had: each atomic rule (one verb,
// group, resource, name) is a cell an allowed request used, its
// streaming pair, or, without a name, a cell used without a name or on
// more than MaxNames names.
func FuzzGenerateGrantsOnlyWhatWasAllowed(f *testing.F) {
	at := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	var seed bytes.Buffer
	for _, r := range randomUse(rand.New(rand.NewPCG(1, 2)), 20) {
		b, _ := json.Marshal(r.Event("/x", "", at))
		seed.Write(append(b, '\n'))
	}
	f.Add(seed.Bytes(), false)
	f.Add([]byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"1","stage":"ResponseComplete",`+
		`"verb":"list","user":{"username":"u"},"impersonatedUser":{"username":"x","groups":["g","system:authenticated"]},`+
		`"authenticationMetadata":{"impersonationConstraint":"impersonate:user-info"},"objectRef":{"resource":"pods",`+
		`"namespace":"a"},"responseStatus":{"code":200},"annotations":{"authorization.k8s.io/decision":"allow"}}`), true)
	f.Add([]byte(`{"verb":"GET","path":"/api/v1/namespaces/a/pods","code":200,"answered":true,"user":"u",`+
		`"request":{"verb":"list","resource":"pods","namespace":"a"}}`), true)
	f.Fuzz(func(t *testing.T, log []byte, asUser bool) {
		o := auditlog.ReadOptions{}
		if asUser {
			o.User = "u"
		}
		l, err := auditlog.Read(bytes.NewReader(log), o)
		require.NoError(t, err)
		p := Generate(l.Requests, PolicyOptions{MaxNames: 2})
		type cell struct{ ns, verb, group, resource string }
		names := map[cell]map[string]bool{}
		for _, r := range l.Requests {
			if r.Decision != auditlog.Allow {
				continue
			}
			ns := r.Namespace
			if r.Resource == "" || risk.ClusterScoped(r.Verb, r.APIGroup, r.Resource) {
				ns = ""
			}
			verbs := []string{r.Verb}
			if upgradedGet(r) {
				verbs = append(verbs, "create")
			}
			for _, v := range verbs {
				c := cell{ns, v, r.APIGroup, r.ResourceWithSub() + r.Path}
				if names[c] == nil {
					names[c] = map[string]bool{}
				}
				names[c][r.Name] = true
			}
		}
		check := func(ns string, rules []rbacv1.PolicyRule) {
			for _, rule := range rules {
				for _, a := range validation.BreakdownRule(rule) {
					what := slices.Concat(a.Resources, a.NonResourceURLs)
					group := ""
					if len(a.APIGroups) > 0 {
						group = a.APIGroups[0]
					}
					used := names[cell{ns, a.Verbs[0], group, what[0]}]
					require.NotNil(t, used, "%s grants %v, which no allowed request used", ns, a)
					for _, n := range a.ResourceNames {
						require.True(t, used[n], "%s grants %v on %q, never used", ns, a, n)
					}
					require.False(t, slices.ContainsFunc(slices.Concat(a.Verbs, a.APIGroups, what),
						func(s string) bool { return strings.Contains(s, "*") }), "a wildcard granted: %v", a)
				}
			}
		}
		if p.ClusterRole != nil {
			check("", p.ClusterRole.Rules)
		}
		for _, r := range p.Roles {
			check(r.Namespace, r.Rules)
		}
		require.Equal(t, fmt.Sprint(len(l.Requests)), fmt.Sprint(len(p.Refused)+len(p.Undecided)+len(p.Wildcards)+
			countAllowed(l.Requests)), "every request is granted, refused, undecided or a wildcard")
	})
}

func countAllowed(reqs []auditlog.Request) int {
	n := 0
	for _, r := range reqs {
		if r.Decision == auditlog.Allow && !wildcard(r) {
			n++
		}
	}
	return n
}
