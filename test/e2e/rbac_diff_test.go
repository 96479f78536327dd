//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authzv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/authzwebhook"
)

// escalationVerbs are the escalation verbs a Role's or ClusterRole's extra
// rule draws from (a ClusterRole's also from the cluster-scoped constrained
// identity checks).
var escalationVerbs = []string{"impersonate", "bind", "escalate", "impersonate:serviceaccount", "impersonate-on:serviceaccount:get",
	"impersonate-on:user-info:list", "impersonate-on:user-info:get", "impersonate-on:arbitrary-node:create"}

// rbacPools are what the generator draws rules from: wildcards, subresources
// (and the "resource/*" form Kubernetes does not expand), "*/sub",
// resourceNames and several API groups.
var rbacPools = struct{ verbs, groups, resources []string }{
	verbs:  []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "*"},
	groups: []string{"", "", "apps", "batch", "rbac.authorization.k8s.io", "*"},
	resources: []string{"pods", "pods/log", "pods/exec", "pods/*", "*/scale", "*/status", "deployments", "deployments/scale",
		"configmaps", "secrets", "services", "jobs", "roles", "rolebindings", "namespaces", "nodes", "*"},
}

func pick(r *rand.Rand, pool []string, min, max int) []string {
	n := min + r.IntN(max-min+1)
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		v := pool[r.IntN(len(pool))]
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

func genRules(r *rand.Rand) []map[string]any {
	var rules []map[string]any
	for range 1 + r.IntN(3) {
		rule := map[string]any{"verbs": pick(r, rbacPools.verbs, 1, 3), "apiGroups": pick(r, rbacPools.groups, 1, 2),
			"resources": pick(r, rbacPools.resources, 1, 3)}
		if r.IntN(5) == 0 {
			rule["resourceNames"] = []string{"named-1"}
		}
		rules = append(rules, rule)
	}
	return rules
}

// genRBAC is a seeded, reproducible set of Roles, ClusterRoles (one of them
// aggregated) and bindings to four users and two groups in namespace ns.
func genRBAC(seed uint64, ns string) (manifest string, users map[string][]string) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	p := fmt.Sprintf("rbac-diff-%d", seed)
	users = map[string][]string{p + "-a": {p + "-g1"}, p + "-b": {p + "-g2", p + "-g1"}, p + "-c": nil, p + "-d": {p + "-g2"}}
	subjects := []map[string]any{
		{"kind": "User", "name": p + "-a"}, {"kind": "User", "name": p + "-b"}, {"kind": "User", "name": p + "-c"}, {"kind": "User", "name": p + "-d"},
		{"kind": "Group", "name": p + "-g1"}, {"kind": "Group", "name": p + "-g2"},
	}
	for _, s := range subjects {
		s["apiGroup"] = "rbac.authorization.k8s.io"
	}
	var docs []any
	docs = append(docs, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}})
	for _, name := range []string{"named-1", "other-1", "other-2"} {
		docs = append(docs, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": ns}})
	}
	// Escalation verbs (impersonate, bind, escalate, constrained
	// impersonation's), from a stream of their own too.
	er := rand.New(rand.NewPCG(seed, seed+2))
	escalation := func(rules []map[string]any, cluster bool) []map[string]any {
		if er.IntN(2) == 0 {
			return rules
		}
		verbs := escalationVerbs
		if cluster {
			verbs = append(append([]string{}, verbs...), "impersonate:user-info", "impersonate:arbitrary-node", "impersonate:associated-node")
		}
		rule := map[string]any{"verbs": pick(er, verbs, 1, 3), "apiGroups": pick(er, []string{"", "rbac.authorization.k8s.io", "authentication.k8s.io", "*"}, 1, 2),
			"resources": pick(er, []string{"users", "groups", "serviceaccounts", "uids", "userextras", "userextras/scopes", "*/scopes", "roles", "clusterroles", "nodes", "pods", "configmaps", "*"}, 1, 3)}
		if er.IntN(4) == 0 {
			rule["resourceNames"] = []string{"named-1"}
		}
		return append(rules, rule)
	}
	for i := range 4 {
		docs = append(docs, map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
			"metadata": map[string]any{"name": fmt.Sprintf("%s-role-%d", p, i), "namespace": ns}, "rules": escalation(genRules(r), false)})
	}
	// One constrained impersonation path for certain: user a may
	// impersonate any user (impersonate:user-info) to get and list pods and
	// configmaps in ns, and group g2 may impersonate service accounts of ns
	// to get pods.
	constrained := func(kind, name, namespace string, rules []map[string]any, subject map[string]any) {
		meta := map[string]any{"name": p + "-" + name}
		bkind := "ClusterRoleBinding"
		if namespace != "" {
			meta["namespace"], bkind = namespace, "RoleBinding"
		}
		docs = append(docs, map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta, "rules": rules},
			map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": bkind, "metadata": meta,
				"roleRef": map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": p + "-" + name}, "subjects": []any{subject}})
	}
	constrained("ClusterRole", "impersonate-user-info", "", []map[string]any{{"verbs": []string{"impersonate:user-info"}, "apiGroups": []string{"authentication.k8s.io"}, "resources": []string{"users"}}}, subjects[0])
	constrained("Role", "impersonate-on", ns, []map[string]any{
		{"verbs": []string{"impersonate-on:user-info:get", "impersonate-on:user-info:list"}, "apiGroups": []string{""}, "resources": []string{"pods", "configmaps"}},
		{"verbs": []string{"impersonate:serviceaccount"}, "apiGroups": []string{"authentication.k8s.io"}, "resources": []string{"serviceaccounts"}},
		{"verbs": []string{"impersonate-on:serviceaccount:get"}, "apiGroups": []string{""}, "resources": []string{"pods"}},
	}, subjects[5])
	// Non-resource URLs, in ClusterRoles only (a Role cannot hold them),
	// from a stream of their own so that the resource rules stay as they were.
	nr := rand.New(rand.NewPCG(seed, seed+1))
	nonResource := func(rules []map[string]any) []map[string]any {
		if nr.IntN(3) > 0 {
			rules = append(rules, map[string]any{"verbs": pick(nr, []string{"get", "post", "*"}, 1, 2),
				"nonResourceURLs": pick(nr, []string{"/healthz", "/metrics", "/metrics*", "/logs/*", "/api", "*"}, 1, 2)})
		}
		return rules
	}
	for i := range 3 {
		docs = append(docs, map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
			"metadata": map[string]any{"name": fmt.Sprintf("%s-clusterrole-%d", p, i), "labels": map[string]any{p + "-agg": "true"}}, "rules": escalation(nonResource(genRules(r)), true)})
	}
	// Aggregated: kube-controller-manager fills its rules from the labelled
	// roles; without one (as here) the server uses the rules it has.
	docs = append(docs, map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
		"metadata":        map[string]any{"name": p + "-aggregated"},
		"aggregationRule": map[string]any{"clusterRoleSelectors": []any{map[string]any{"matchLabels": map[string]any{p + "-agg": "true"}}}},
		"rules":           genRules(r)})
	for i := range 5 {
		var ref map[string]any
		if r.IntN(2) == 0 {
			ref = map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": fmt.Sprintf("%s-role-%d", p, r.IntN(4))}
		} else {
			ref = map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": fmt.Sprintf("%s-clusterrole-%d", p, r.IntN(3))}
		}
		docs = append(docs, map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
			"metadata": map[string]any{"name": fmt.Sprintf("%s-rb-%d", p, i), "namespace": ns}, "roleRef": ref,
			"subjects": []any{subjects[r.IntN(len(subjects))], subjects[r.IntN(len(subjects))]}})
	}
	for i := range 2 {
		name := fmt.Sprintf("%s-clusterrole-%d", p, r.IntN(3))
		if i == 1 {
			name = p + "-aggregated"
		}
		docs = append(docs, map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
			"metadata": map[string]any{"name": fmt.Sprintf("%s-crb-%d", p, i)},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
			"subjects": []any{subjects[r.IntN(len(subjects))]}})
	}
	var b strings.Builder
	for _, d := range docs {
		y, _ := yaml.Marshal(d)
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.String(), users
}

// sarClient asks the real kube-apiserver (as the admin) whether a user
// with groups may do something: the oracle.
type sarClient struct {
	url string
	hc  *http.Client
}

func (s sarClient) allowed(user string, groups []string, attrs map[string]string) (bool, error) {
	return s.allowedExactly(user, append(append([]string{}, groups...), "system:authenticated"), attrs)
}

// allowedExactly asks for user with exactly these groups.
func (s sarClient) allowedExactly(user string, groups []string, attrs map[string]string) (bool, error) {
	spec := map[string]any{"user": user, "groups": groups, "resourceAttributes": attrs}
	if path, ok := attrs["path"]; ok {
		delete(spec, "resourceAttributes")
		spec["nonResourceAttributes"] = map[string]string{"path": path, "verb": attrs["verb"]}
	}
	body, _ := json.Marshal(map[string]any{"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec})
	req, _ := http.NewRequest(http.MethodPost, s.url+"/apis/authorization.k8s.io/v1/subjectaccessreviews", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.hc.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	var out struct {
		Status struct {
			Allowed bool `json:"allowed"`
		} `json:"status"`
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("SubjectAccessReview: HTTP %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return false, err
	}
	return out.Status.Allowed, nil
}

// diffMatrix is what the differential reads of access -o json: every
// cell, the escalation checks and the impersonate-on rows.
type diffMatrix struct {
	Rows       []diffRow `json:"rows"`
	Escalation []struct {
		Verb             string `json:"verb"`
		Resource         string `json:"resource"`
		Subresource      string `json:"subresource"`
		Namespace        string `json:"namespace"`
		Name             string `json:"name"`
		Allowed          bool   `json:"allowed"`
		DecidedElsewhere bool   `json:"decidedElsewhere"`
	} `json:"escalation"`
	ImpersonateOn map[string][]diffRow `json:"impersonateOn"`
}

// cellsOf is every answer of a matrix by name: "cell VERB RESOURCE",
// "impersonate-on MODE VERB RESOURCE", "escalation VERB RESOURCE NAMESPACE NAME".
func cellsOf(m diffMatrix) map[string]bool {
	out := map[string]bool{}
	for _, r := range m.Rows {
		for v, cell := range r.Cells {
			out["cell "+v+" "+r.Resource] = cell.Allowed
		}
	}
	for mode, rows := range m.ImpersonateOn {
		for _, r := range rows {
			for v, cell := range r.Cells {
				out["impersonate-on "+mode+" "+v+" "+r.Resource] = cell.Allowed
			}
		}
	}
	for _, e := range m.Escalation {
		out["escalation "+e.Verb+" "+e.Resource+"/"+e.Subresource+" "+e.Namespace+" "+e.Name] = e.Allowed
	}
	return out
}

type diffRow struct {
	Resource string `json:"resource"`
	Cells    map[string]struct {
		Allowed          bool   `json:"allowed"`
		Source           string `json:"source"`
		DecidedElsewhere bool   `json:"decidedElsewhere"`
	} `json:"verbs"`
}

// diffCounts are what a differential run compared (and found allowed).
type diffCounts struct {
	cells, escalation, impersonateOn, allowedEscalation, allowedImpersonateOn, elsewhere int
	// allNamespacesCells: access -A's answers compared with access -n's.
	allNamespacesCells                                             int
	objects, subjects, allowedObjects, allowedSubjects, whyByAlias int
	// verified: who-can --verify's subjects, each compared with the
	// server's answer for the synthetic member it stands for.
	verified, verifiedDenied int
	diffs                    int
}

// TestRBACDifferential: for seeded random RBAC applied to the real
// kube-apiserver (RBAC its only authorizer), every cell of `access
// --subresources` (namespaced and --cluster-scope), its escalation checks
// and impersonate-on cells, for every generated identity; the objects
// `list` keeps per verb; whether `who-can` names each identity (resources
// typed by plural and by a short name, kind or singular, escalation verbs
// included); and why's exit code by short name, are compared with a
// SubjectAccessReview the server answers. A difference prints the seed and
// the case.
func TestRBACDifferential(t *testing.T) {
	c := rbacDifferential(t, st.api["legacy"], nil, []uint64{1, 2, 3, 4, 5})
	t.Logf("RBAC differential: access -A from the RBAC objects, %d answers equal to access -n's", c.allNamespacesCells)
	assert.Greater(t, c.allNamespacesCells, 10000, "access -A's answers compared")
	t.Logf("RBAC differential: 5 seeds, %d access cells, %d escalation checks (%d allowed), %d impersonate-on cells (%d allowed), "+
		"%d list decisions (object × verb × identity, %d allowed), %d who-can decisions (target × identity, %d allowed), %d who-can --verify subjects (%d denied), %d why by short name, %d differences",
		c.cells, c.escalation, c.allowedEscalation, c.impersonateOn, c.allowedImpersonateOn, c.objects, c.allowedObjects, c.subjects, c.allowedSubjects, c.verified, c.verifiedDenied, c.whyByAlias, c.diffs)
	// Neither side may be trivially all-or-nothing.
	assert.Positive(t, c.allowedObjects)
	// docs/testing.md's figures: the decisions are fixed by construction, the cells vary by release.
	assert.Equal(t, 180, c.objects, "list decisions")
	assert.Equal(t, 3000, c.subjects, "who-can decisions")
	assert.Equal(t, 160, c.whyByAlias, "why by short name")
	assert.Equal(t, 5*4*(2*12+5), c.escalation, "escalation checks: the cluster's 12 at each scope, the namespace's 5")
	assert.Greater(t, c.cells, 10000, "access cells")
	assert.Less(t, c.allowedObjects, c.objects)
	assert.Positive(t, c.allowedSubjects)
	assert.Less(t, c.allowedSubjects, c.subjects)
	assert.Positive(t, c.allowedEscalation)
	assert.Less(t, c.allowedEscalation, c.escalation)
	assert.Positive(t, c.allowedImpersonateOn)
	assert.Less(t, c.allowedImpersonateOn, c.impersonateOn)
	assert.Zero(t, c.elsewhere, "RBAC alone: nothing decided elsewhere")
	assert.Positive(t, c.verified)
	assert.Zero(t, c.verifiedDenied, "RBAC alone: who-can --verify confirms every subject")
	assert.Zero(t, c.diffs)
}

// TestRBACDifferentialWebhookChain: the same on the kube-apiserver whose
// --authorization-config puts a webhook before Node and RBAC, with a seed
// whose identities the webhook decides for (webhookDiffRules): every rules
// review says incomplete, every cell is an access review, and the cells
// the webhook decides against RBAC are marked.
func TestRBACDifferentialWebhookChain(t *testing.T) {
	c := rbacDifferential(t, st.api["webhook"], st.webhook, []uint64{webhookDiffSeed})
	t.Logf("RBAC differential with a webhook authorizer: seed %d, %d access cells (%d marked decided elsewhere), %d escalation checks (%d allowed), %d impersonate-on cells (%d allowed), "+
		"%d list decisions, %d who-can decisions, %d who-can --verify subjects (%d denied), %d why by short name, %d differences",
		webhookDiffSeed, c.cells, c.elsewhere, c.escalation, c.allowedEscalation, c.impersonateOn, c.allowedImpersonateOn, c.objects, c.subjects, c.verified, c.verifiedDenied, c.whyByAlias, c.diffs)
	assert.Equal(t, 36, c.objects)
	assert.Equal(t, 600, c.subjects)
	assert.Equal(t, 32, c.whyByAlias)
	assert.Equal(t, 4*(2*12+5), c.escalation)
	assert.Greater(t, c.cells, 2000)
	assert.Positive(t, c.elsewhere, "the webhook's decisions are marked")
	assert.Positive(t, c.verified)
	assert.Positive(t, c.allowedImpersonateOn)
	assert.Zero(t, c.diffs)
}

// rbacDifferential applies each seed's RBAC to api and compares.
func rbacDifferential(t *testing.T, api *apiserver, chain *authzwebhook.Handler, seeds []uint64) diffCounts {
	admin, err := st.adminKubeconfig(api)
	require.NoError(t, err)
	env := baseEnv(t.TempDir())
	hc := st.tlsClient()
	hc.Transport.(*http.Transport).MaxIdleConnsPerHost = 16
	oracle := sarClient{url: api.url, hc: hc}
	var c diffCounts
	for _, seed := range seeds {
		ns := fmt.Sprintf("rbac-diff-%d", seed)
		manifest, users := genRBAC(seed, ns)
		cmd := exec.Command(st.kubectl, "--kubeconfig="+admin, "apply", "-f", "-")
		cmd.Stdin = strings.NewReader(manifest)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err := runWithContext(ctx, cmd)
		cancel()
		require.NoError(t, err, "seed %d: applying the generated RBAC: %s", seed, out.String())
		cells := 0
		for user, groups := range users {
			as := []string{"--kubeconfig=" + admin, "--as=" + user}
			for _, g := range groups {
				as = append(as, "--as-group="+g)
			}
			var nsMatrix diffMatrix
			checkAll := func() {
				// access -A: the seed namespace's matrix, from the RBAC
				// objects read once (RBAC alone) or the rules reviews (a
				// webhook in the chain), equals the per-namespace one above,
				// which equals SubjectAccessReview cell by cell.
				r := run(t, env, false, append([]string{st.ki, "access", "-A", "-o", "json", "--subresources", "--max-reviews=0"}, as...)...)
				require.Equal(t, 0, r.code, "access -A: %s", r.stderr)
				var all []struct {
					diffMatrix
					Namespace string `json:"namespace"`
					RulesFrom string `json:"rulesFrom"`
				}
				require.NoError(t, json.Unmarshal([]byte(r.stdout), &all))
				found := false
				for _, am := range all {
					wantFrom := "rbac-objects"
					if chain != nil {
						wantFrom = ""
					}
					assert.Equal(t, wantFrom, am.RulesFrom, "seed %d, %s: access -A's rules in %s", seed, user, am.Namespace)
					if am.Namespace != ns {
						continue
					}
					found = true
					if !assert.Equal(t, cellsOf(nsMatrix), cellsOf(am.diffMatrix), "seed %d, %s %v: access -A in %s equals access -n", seed, user, groups, ns) {
						c.diffs++
					}
					c.allNamespacesCells += len(cellsOf(am.diffMatrix))
				}
				assert.True(t, found, "access -A lists %s", ns)
			}
			for _, scope := range [][]string{{"-n", ns}, {"--cluster-scope"}} {
				r := run(t, env, false, append(append([]string{st.ki, "access", "-o", "json", "--subresources", "--max-reviews=0"}, as...), scope...)...)
				require.Equal(t, 0, r.code, "access %v: %s", scope, r.stderr)
				var m diffMatrix
				require.NoError(t, json.Unmarshal([]byte(r.stdout), &m))
				if scope[0] == "-n" {
					nsMatrix = m
				}
				type question struct {
					what    string
					attrs   map[string]string
					got     bool
					counter *int
					allowed *int
				}
				var todo []question
				namespace := ""
				if scope[0] == "-n" {
					namespace = ns
				}
				rows := func(kind string, rows []diffRow, prefix string, counter, allowed *int) {
					for _, row := range rows {
						for verb, cell := range row.Cells {
							if cell.Source == "n/a" {
								continue
							}
							if cell.DecidedElsewhere {
								c.elsewhere++
							}
							res, group, _ := strings.Cut(row.Resource, ".")
							name, sub, _ := strings.Cut(res, "/")
							todo = append(todo, question{what: kind + " " + prefix + verb + " " + row.Resource, got: cell.Allowed, counter: counter, allowed: allowed,
								attrs: map[string]string{"verb": prefix + verb, "group": group, "resource": name, "subresource": sub, "namespace": namespace}})
						}
					}
				}
				var discard int
				rows("cell", m.Rows, "", &cells, &discard)
				for mode, r := range m.ImpersonateOn {
					rows("impersonate-on", r, "impersonate-on:"+mode+":", &c.impersonateOn, &c.allowedImpersonateOn)
				}
				for _, e := range m.Escalation {
					if e.DecidedElsewhere {
						c.elsewhere++
					}
					res, group, _ := strings.Cut(e.Resource, ".")
					todo = append(todo, question{what: "escalation " + e.Verb + " " + e.Resource + " " + e.Namespace, got: e.Allowed, counter: &c.escalation, allowed: &c.allowedEscalation,
						attrs: map[string]string{"verb": e.Verb, "group": group, "resource": res, "subresource": e.Subresource, "name": e.Name, "namespace": e.Namespace}})
				}
				var mu sync.Mutex
				var wg sync.WaitGroup
				sem := make(chan struct{}, 16)
				var firstErr error
				for _, q := range todo {
					wg.Add(1)
					sem <- struct{}{}
					go func() {
						defer wg.Done()
						defer func() { <-sem }()
						want, err := oracle.allowed(user, groups, q.attrs)
						mu.Lock()
						defer mu.Unlock()
						if err != nil {
							firstErr = err
							return
						}
						*q.counter++
						if q.got {
							*q.allowed++
						}
						if q.got != want {
							c.diffs++
							t.Errorf("seed %d, %s %v, %s, %s: access says %v, kube-apiserver says %v", seed, user, groups, strings.Join(scope, " "), q.what, q.got, want)
						}
					}()
				}
				wg.Wait()
				require.NoError(t, firstErr)
			}
			checkAll()
		}
		t.Logf("seed %d: %d cells compared with SubjectAccessReview", seed, cells)
		assert.GreaterOrEqual(t, cells, 2000, "seed %d", seed)
		c.cells += cells
		listAndWhoCan(t, env, admin, oracle, chain, seed, ns, users, &c)
	}
	return c
}

// listAndWhoCan compares, for every generated identity, the objects `list`
// keeps per verb, whether `who-can` names the identity (as a user or one of
// its groups) per target, typed by plural and by an alias, escalation verbs
// included, and why's exit code by alias, with the server's
// SubjectAccessReview.
func listAndWhoCan(t *testing.T, env []string, admin string, oracle sarClient, chain *authzwebhook.Handler, seed uint64, ns string, users map[string][]string, c *diffCounts) {
	t.Helper()
	names := []string{"named-1", "other-1", "other-2"}
	for user, groups := range users {
		as := []string{"--kubeconfig=" + admin, "--as=" + user}
		for _, g := range groups {
			as = append(as, "--as-group="+g)
		}
		for _, verb := range []string{"get", "delete", "update"} {
			typed := map[string]string{"get": "configmaps", "delete": "cm", "update": "ConfigMap"}[verb]
			r := run(t, env, false, append([]string{st.ki, "list", typed, "-n", ns, "--verb=" + verb, "-o", "name"}, as...)...)
			require.Equal(t, 0, r.code, "list: %s", r.stderr)
			for _, name := range names {
				kept := strings.Contains(r.stdout, "configmap/"+name+"\n")
				want, err := oracle.allowed(user, groups, map[string]string{"verb": verb, "resource": "configmaps", "namespace": ns, "name": name})
				require.NoError(t, err)
				c.objects++
				if want {
					c.allowedObjects++
				}
				if kept != want {
					c.diffs++
					t.Errorf("seed %d, %s %v: list %s --verb=%s keeps configmap/%s: %v, kube-apiserver says %v", seed, user, groups, typed, verb, name, kept, want)
				}
			}
		}
	}
	type target struct{ verb, resource, group, sub, path, alias string }
	var targets []target
	for _, v := range []string{"get", "post"} {
		for _, path := range []string{"/healthz", "/metrics", "/metrics/cadvisor", "/logs/kube-apiserver.log", "/logs", "/api", "/version"} {
			targets = append(targets, target{verb: v, path: path})
		}
	}
	// Each resource by its plural, then as people type it: a short name, a
	// kind, a singular (kubectl's resolution through discovery).
	resources := []target{{resource: "pods", alias: "po"}, {resource: "pods", sub: "log", alias: "po/log"}, {resource: "pods", sub: "exec", alias: "Pod/exec"},
		{resource: "deployments", group: "apps", alias: "deploy"}, {resource: "deployments", group: "apps", sub: "scale", alias: "deployment.apps/scale"},
		{resource: "configmaps", alias: "cm"}, {resource: "secrets", alias: "secret"}, {resource: "jobs", group: "batch", alias: "job.v1.batch"}}
	for _, v := range []string{"get", "list", "create", "update", "patch", "delete", "deletecollection", "watch"} {
		for _, r := range resources {
			r.verb = v
			targets = append(targets, r)
			targets = append(targets, target{verb: v, resource: r.resource, group: r.group, sub: r.sub, alias: "typed:" + r.alias})
		}
	}
	// Escalation verbs, asked where kube-apiserver asks them.
	for _, e := range []target{{verb: "impersonate", resource: "users"}, {verb: "impersonate", resource: "serviceaccounts"},
		{verb: "bind", resource: "roles", group: "rbac.authorization.k8s.io"}, {verb: "escalate", resource: "clusterroles", group: "rbac.authorization.k8s.io"},
		{verb: "bind", resource: "clusterroles", group: "rbac.authorization.k8s.io"},
		{verb: "impersonate:user-info", resource: "users", group: "authentication.k8s.io"},
		{verb: "impersonate:serviceaccount", resource: "serviceaccounts", group: "authentication.k8s.io"},
		{verb: "impersonate-on:user-info:list", resource: "pods"}} {
		targets = append(targets, e)
	}
	clusterScoped := map[string]bool{"impersonate users": true, "escalate clusterroles": true, "impersonate:user-info users": true}
	for _, tg := range targets {
		arg := tg.resource
		if tg.group != "" {
			arg += "." + tg.group
		}
		if tg.sub != "" {
			arg += "/" + tg.sub
		}
		if typed, ok := strings.CutPrefix(tg.alias, "typed:"); ok {
			arg = typed
		}
		attrs := map[string]string{"verb": tg.verb, "group": tg.group, "resource": tg.resource, "subresource": tg.sub, "namespace": ns}
		if clusterScoped[tg.verb+" "+tg.resource] {
			attrs["namespace"] = ""
		}
		if tg.path != "" {
			arg, attrs = tg.path, map[string]string{"verb": tg.verb, "path": tg.path}
		}
		r := run(t, env, false, st.ki, "who-can", tg.verb, arg, "-n", ns, "-o", "json", "--verify", "--kubeconfig="+admin)
		require.Equal(t, 0, r.code, "who-can: %s", r.stderr)
		var grants []struct {
			BindingKind string                        `json:"bindingKind"`
			Namespace   string                        `json:"namespace"`
			Subjects    []struct{ Kind, Name string } `json:"subjects"`
			Denied      map[string]string             `json:"deniedBySubject"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &grants), r.stdout)
		// --verify: each subject as the synthetic member it stands for
		// (docs/inspection.md), in the binding's namespace.
		for _, g := range grants {
			for _, s := range g.Subjects {
				user, groups, ok := syntheticMember(s.Kind, s.Name)
				if !ok {
					continue
				}
				a := maps.Clone(attrs)
				if g.BindingKind == "RoleBinding" && a["namespace"] != "" {
					a["namespace"] = g.Namespace
				}
				want, err := oracle.allowedExactly(user, groups, a)
				require.NoError(t, err)
				_, denied := g.Denied[s.Kind+":"+s.Name]
				c.verified++
				if denied {
					c.verifiedDenied++
				}
				if denied == want {
					c.diffs++
					t.Errorf("seed %d: who-can %s %s -n %s --verify: %s:%s denied %v, kube-apiserver says allowed %v", seed, tg.verb, arg, ns, s.Kind, s.Name, denied, want)
				}
			}
		}
		for user, groups := range users {
			named := false
			for _, g := range grants {
				for _, s := range g.Subjects {
					named = named || (s.Kind == "User" && s.Name == user) ||
						(s.Kind == "Group" && (s.Name == "system:authenticated" || slices.Contains(groups, s.Name)))
				}
			}
			want, err := oracle.allowed(user, groups, attrs)
			require.NoError(t, err)
			c.subjects++
			if want {
				c.allowedSubjects++
			}
			// RBAC alone decides who-can; where a webhook decides, the
			// differential's who-can part is --verify's (below).
			if named != want && !webhookDecides(chain, user, groups, attrs) {
				c.diffs++
				t.Errorf("seed %d, %s %v: who-can %s %s -n %s names it: %v, kube-apiserver says %v", seed, user, groups, tg.verb, arg, ns, named, want)
			}
		}
	}
	// why by alias: its exit code is the cluster's answer (one verb per
	// resource and identity, rotating).
	i := 0
	for user, groups := range users {
		as := []string{"--kubeconfig=" + admin, "--as=" + user}
		for _, g := range groups {
			as = append(as, "--as-group="+g)
		}
		for _, r := range resources {
			verb := []string{"get", "list", "create", "update", "patch", "delete", "deletecollection", "watch"}[i%8]
			i++
			res := run(t, env, false, append([]string{st.ki, "why", verb, r.alias, "-n", ns, "-q"}, as...)...)
			want, err := oracle.allowed(user, groups, map[string]string{"verb": verb, "group": r.group, "resource": r.resource, "subresource": r.sub, "namespace": ns})
			require.NoError(t, err)
			c.whyByAlias++
			if (res.code == 0) != want || (res.code != 0 && res.code != 1) {
				c.diffs++
				t.Errorf("seed %d, %s %v: why %s %s -n %s exits %d (%s), kube-apiserver says %v", seed, user, groups, verb, r.alias, ns, res.code, res.stderr, want)
			}
		}
	}
}

// webhookDecides tells whether the chain's webhook (nil: none) has an
// opinion on user's request.
func webhookDecides(chain *authzwebhook.Handler, user string, groups []string, attrs map[string]string) bool {
	if chain == nil || attrs["path"] != "" {
		return false
	}
	_, ok := chain.Decides(authzv1.SubjectAccessReviewSpec{User: user, Groups: append(append([]string{}, groups...), "system:authenticated"),
		ResourceAttributes: &authzv1.ResourceAttributes{Verb: attrs["verb"], Group: attrs["group"], Resource: attrs["resource"],
			Subresource: attrs["subresource"], Namespace: attrs["namespace"], Name: attrs["name"]}})
	return ok
}

// syntheticMember is the identity who-can --verify asks for a binding's
// user or group subject (docs/inspection.md): a user with the
// authenticated group, a member of a group; the anonymous user and the
// unauthenticated group as kube-apiserver gives them. Service accounts are
// left out here.
func syntheticMember(kind, name string) (user string, groups []string, ok bool) {
	switch {
	case kind == "User" && name == "system:anonymous":
		return name, []string{"system:unauthenticated"}, true
	case kind == "User" && !strings.HasPrefix(name, "system:serviceaccount:"):
		return name, []string{"system:authenticated"}, true
	case kind == "Group" && name == "system:unauthenticated":
		return "system:anonymous", []string{name}, true
	case kind == "Group" && name == "system:authenticated":
		return "", []string{name}, true
	case kind == "Group":
		return "", []string{name, "system:authenticated"}, true
	}
	return "", nil, false
}
