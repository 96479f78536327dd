//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
	"sigs.k8s.io/yaml"
)

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
	for i := range 4 {
		docs = append(docs, map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
			"metadata": map[string]any{"name": fmt.Sprintf("%s-role-%d", p, i), "namespace": ns}, "rules": genRules(r)})
	}
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
			"metadata": map[string]any{"name": fmt.Sprintf("%s-clusterrole-%d", p, i), "labels": map[string]any{p + "-agg": "true"}}, "rules": nonResource(genRules(r))})
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
	spec := map[string]any{"user": user, "groups": append(append([]string{}, groups...), "system:authenticated"), "resourceAttributes": attrs}
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

// TestRBACDifferential: for seeded random RBAC applied to the real
// kube-apiserver, every cell of `access --subresources` (namespaced and
// --cluster-scope) for every generated identity, the objects `list` keeps
// per verb, and whether `who-can` names each identity, are compared with a
// SubjectAccessReview the server answers. A difference prints the seed and
// the case.
func TestRBACDifferential(t *testing.T) {
	api := st.api["legacy"]
	admin, err := st.adminKubeconfig(api)
	require.NoError(t, err)
	env := baseEnv(t.TempDir())
	hc := st.tlsClient()
	hc.Transport.(*http.Transport).MaxIdleConnsPerHost = 16
	oracle := sarClient{url: api.url, hc: hc}
	total, diffs, objects, subjects, allowedObjects, allowedSubjects := 0, 0, 0, 0, 0, 0
	for seed := uint64(1); seed <= 5; seed++ {
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
			for _, scope := range [][]string{{"-n", ns}, {"--cluster-scope"}} {
				m := accessMatrix(t, env, append(append(as, scope...), "--subresources")...)
				type cell struct{ res, verb string }
				var todo []cell
				for _, row := range m.Rows {
					for verb, c := range row.Cells {
						if c.Source != "n/a" {
							todo = append(todo, cell{row.Resource, verb})
						}
					}
				}
				var mu sync.Mutex
				var wg sync.WaitGroup
				sem := make(chan struct{}, 16)
				var firstErr error
				for _, c := range todo {
					wg.Add(1)
					sem <- struct{}{}
					go func() {
						defer wg.Done()
						defer func() { <-sem }()
						res, group, _ := strings.Cut(c.res, ".")
						name, sub, _ := strings.Cut(res, "/")
						attrs := map[string]string{"verb": c.verb, "group": group, "resource": name, "subresource": sub}
						if scope[0] == "-n" {
							attrs["namespace"] = ns
						}
						want, err := oracle.allowed(user, groups, attrs)
						mu.Lock()
						defer mu.Unlock()
						if err != nil {
							firstErr = err
							return
						}
						got := false
						for _, row := range m.Rows {
							if row.Resource == c.res {
								got = row.Cells[c.verb].Allowed
							}
						}
						if got != want {
							diffs++
							t.Errorf("seed %d, %s %v, %s %s %s: access says %v, kube-apiserver says %v", seed, user, groups, strings.Join(scope, " "), c.verb, c.res, got, want)
						}
					}()
				}
				wg.Wait()
				require.NoError(t, firstErr)
				cells += len(todo)
			}
		}
		t.Logf("seed %d: %d cells compared with SubjectAccessReview", seed, cells)
		assert.GreaterOrEqual(t, cells, 2000, "seed %d", seed)
		total += cells
		objs, subs, okObjs, okSubs := listAndWhoCan(t, env, admin, oracle, seed, ns, users, &diffs)
		objects += objs
		subjects += subs
		allowedObjects += okObjs
		allowedSubjects += okSubs
	}
	t.Logf("RBAC differential: 5 seeds, %d access cells, %d list decisions (object × verb × identity, %d allowed), %d who-can decisions (target × identity, %d allowed), %d differences",
		total, objects, allowedObjects, subjects, allowedSubjects, diffs)
	// Neither side may be trivially all-or-nothing.
	assert.Positive(t, allowedObjects)
	// README's figures: the decisions are fixed by construction, the cells vary by release.
	assert.Equal(t, 180, objects, "list decisions")
	assert.Equal(t, 1560, subjects, "who-can decisions")
	assert.Greater(t, total, 10000, "access cells")
	assert.Less(t, allowedObjects, objects)
	assert.Positive(t, allowedSubjects)
	assert.Less(t, allowedSubjects, subjects)
}

// listAndWhoCan compares, for every generated identity, the objects `list`
// keeps per verb, and whether `who-can` names the identity (as a user or
// one of its groups) per target, with the server's SubjectAccessReview.
func listAndWhoCan(t *testing.T, env []string, admin string, oracle sarClient, seed uint64, ns string, users map[string][]string, diffs *int) (objects, subjects, allowedObjects, allowedSubjects int) {
	t.Helper()
	names := []string{"named-1", "other-1", "other-2"}
	for user, groups := range users {
		as := []string{"--kubeconfig=" + admin, "--as=" + user}
		for _, g := range groups {
			as = append(as, "--as-group="+g)
		}
		for _, verb := range []string{"get", "delete", "update"} {
			r := run(t, env, false, append([]string{st.ki, "list", "configmaps", "-n", ns, "--verb=" + verb, "-o", "name"}, as...)...)
			require.Equal(t, 0, r.code, "list: %s", r.stderr)
			for _, name := range names {
				kept := strings.Contains(r.stdout, "configmap/"+name+"\n")
				want, err := oracle.allowed(user, groups, map[string]string{"verb": verb, "resource": "configmaps", "namespace": ns, "name": name})
				require.NoError(t, err)
				objects++
				if want {
					allowedObjects++
				}
				if kept != want {
					*diffs++
					t.Errorf("seed %d, %s %v: list --verb=%s keeps configmap/%s: %v, kube-apiserver says %v", seed, user, groups, verb, name, kept, want)
				}
			}
		}
	}
	type target struct{ verb, resource, group, sub, path string }
	var targets []target
	for _, v := range []string{"get", "post"} {
		for _, path := range []string{"/healthz", "/metrics", "/metrics/cadvisor", "/logs/kube-apiserver.log", "/logs", "/api", "/version"} {
			targets = append(targets, target{verb: v, path: path})
		}
	}
	for _, v := range []string{"get", "list", "create", "update", "patch", "delete", "deletecollection", "watch"} {
		for _, r := range []target{{resource: "pods"}, {resource: "pods", sub: "log"}, {resource: "pods", sub: "exec"},
			{resource: "deployments", group: "apps"}, {resource: "deployments", group: "apps", sub: "scale"},
			{resource: "configmaps"}, {resource: "secrets"}, {resource: "jobs", group: "batch"}} {
			r.verb = v
			targets = append(targets, r)
		}
	}
	for _, tg := range targets {
		arg := tg.resource
		if tg.group != "" {
			arg += "." + tg.group
		}
		if tg.sub != "" {
			arg += "/" + tg.sub
		}
		attrs := map[string]string{"verb": tg.verb, "group": tg.group, "resource": tg.resource, "subresource": tg.sub, "namespace": ns}
		if tg.path != "" {
			arg, attrs = tg.path, map[string]string{"verb": tg.verb, "path": tg.path}
		}
		r := run(t, env, false, st.ki, "who-can", tg.verb, arg, "-n", ns, "-o", "json", "--kubeconfig="+admin)
		require.Equal(t, 0, r.code, "who-can: %s", r.stderr)
		var grants []struct {
			Subjects []struct{ Kind, Name string } `json:"subjects"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &grants), r.stdout)
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
			subjects++
			if want {
				allowedSubjects++
			}
			if named != want {
				*diffs++
				t.Errorf("seed %d, %s %v: who-can %s %s -n %s names it: %v, kube-apiserver says %v", seed, user, groups, tg.verb, arg, ns, named, want)
			}
		}
	}
	return objects, subjects, allowedObjects, allowedSubjects
}
