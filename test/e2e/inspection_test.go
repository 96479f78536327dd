//go:build e2e

// Inspection on the real API server: the access matrix, why and who-can,
// request counts, and the access-filtered list of seed 004.

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type matrix struct {
	Requests   int  `json:"requests"`
	Incomplete bool `json:"rulesIncomplete"`
	Escalation []struct {
		Verb     string `json:"verb"`
		Resource string `json:"resource"`
		Allowed  bool   `json:"allowed"`
		Source   string `json:"source"`
	} `json:"escalation"`
	ImpersonateOn map[string]json.RawMessage `json:"impersonateOn"`
	Rows          []struct {
		Resource string `json:"resource"`
		Cells    map[string]struct {
			Allowed bool   `json:"allowed"`
			Source  string `json:"source"`
		} `json:"verbs"`
	} `json:"rows"`
}

// allowed is the set of "resource verb" the matrix allows.
func (m matrix) allowed() map[string]bool {
	out := map[string]bool{}
	for _, r := range m.Rows {
		for v, c := range r.Cells {
			if c.Allowed {
				out[r.Resource+" "+v] = true
			}
		}
	}
	return out
}

func accessMatrix(t *testing.T, env []string, args ...string) matrix {
	t.Helper()
	r := run(t, env, false, append([]string{st.ki, "access", "-o", "json"}, args...)...)
	require.Equal(t, 0, r.code, "access %v: %s", args, r.stderr)
	var m matrix
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &m))
	return m
}

// The access matrix: from one rules review, equal to one access review per
// cell, and different for another identity as bound.
func TestAccessMatrix(t *testing.T) {
	api := st.api["legacy"]
	alice := newPerson(t, "alice", api)
	r := alice.kubectl("get", "pods", "-n", "team-a")
	require.Equal(t, 0, r.code, r.stderr)

	start := time.Now()
	fast := accessMatrix(t, alice.env, "--kubeconfig="+alice.kubeconfig, "-n", "team-a")
	fastTime := time.Since(start)
	start = time.Now()
	truth := accessMatrix(t, alice.env, "--kubeconfig="+alice.kubeconfig, "-n", "team-a", "--method=ssar")
	truthTime := time.Since(start)
	assert.False(t, fast.Incomplete)
	assert.Equal(t, truth.allowed(), fast.allowed(), "the rules review agrees with one access review per cell")
	assert.Equal(t, 1, fast.Requests, "one API request after discovery when the rules review is complete")
	t.Logf("%d rows × 8 verbs: %d requests in %s with the rules review, %d in %s with one access review per cell (whole command, discovery included)",
		len(fast.Rows), fast.Requests, fastTime.Round(time.Millisecond), truth.Requests, truthTime.Round(time.Millisecond))
	for _, v := range []string{"get", "list", "watch"} {
		assert.True(t, fast.allowed()["pods "+v], v)
	}
	assert.False(t, fast.allowed()["pods create"])
	assert.False(t, fast.allowed()["secrets get"])

	// --as: the admin sees alice's matrix as alice, and bob's as bob.
	admin, err := st.adminKubeconfig(api)
	require.NoError(t, err)
	asAlice := accessMatrix(t, baseEnv(t.TempDir()), "--kubeconfig="+admin, "-n", "team-a", "--as=alice@example.com", "--as-group=developers")
	asBob := accessMatrix(t, baseEnv(t.TempDir()), "--kubeconfig="+admin, "-n", "team-a", "--as=bob@example.com", "--as-group=guests")
	for _, v := range []string{"get", "list", "watch"} {
		assert.True(t, asAlice.allowed()["pods "+v])
		assert.False(t, asBob.allowed()["pods "+v], "bob is not bound")
	}
	diff := accessMatrix(t, baseEnv(t.TempDir()), "--kubeconfig="+admin, "-n", "team-a", "--as=alice@example.com", "--as-group=developers",
		"--diff-as=bob@example.com", "--diff-as-group=guests")
	require.Len(t, diff.Rows, 1, "alice and bob differ on pods only")
	assert.Equal(t, "pods", diff.Rows[0].Resource)
	assert.False(t, diff.Rows[0].Cells["list"].Allowed, "bob's answer")

	// --token-identity impersonates exactly what the server reports for the
	// credentials: for the admin, the same matrix as without it.
	plain := accessMatrix(t, baseEnv(t.TempDir()), "--kubeconfig="+admin, "-n", "team-a")
	same := accessMatrix(t, baseEnv(t.TempDir()), "--kubeconfig="+admin, "-n", "team-a", "--token-identity")
	assert.Equal(t, plain.allowed(), same.allowed())

	// Escalation paths: alice holds none, and no rule of her namespace's
	// review could grant a cluster-scoped one (1 request, above). The admin
	// holds every one: the cluster's rules, reviewed apart (a namespace no
	// object can be in), answer the cluster-scoped checks: 2 requests, no
	// access review, and every constrained mode's impersonate-on cells.
	for _, e := range fast.Escalation {
		assert.False(t, e.Allowed, "alice: %s %s", e.Verb, e.Resource)
	}
	assert.Len(t, fast.Escalation, 17)
	assert.Empty(t, fast.ImpersonateOn)
	assert.Equal(t, 2, plain.Requests, "the namespace's rules review and the cluster's")
	for _, e := range plain.Escalation {
		assert.True(t, e.Allowed, "admin: %s %s", e.Verb, e.Resource)
		assert.Equal(t, "rules", e.Source, "admin: %s %s", e.Verb, e.Resource)
	}
	assert.Len(t, plain.ImpersonateOn, 4)

	// -A --as: an admin asking about alice lists the namespaces with its
	// own rights (alice may not list them).
	all := run(t, baseEnv(t.TempDir()), false, st.ki, "access", "-A", "--kubeconfig="+admin, "--as=alice@example.com", "--as-group=developers",
		"--verb=list", "--escalation=false", "-o", "json")
	require.Equal(t, 0, all.code, all.stderr)
	var perNS []matrix
	require.NoError(t, json.Unmarshal([]byte(all.stdout), &perNS))
	assert.Greater(t, len(perNS), 2, "one matrix per namespace")

	human := run(t, alice.env, false, st.ki, "access", "--kubeconfig="+alice.kubeconfig, "-n", "team-a", "--verb=get,create")
	require.Equal(t, 0, human.code, human.stderr)
	assert.Regexp(t, `(?m)^pods\s+✔\s+✗\s*$`, human.stdout)
}

// why names the binding; who-can finds alice's group.
func TestWhyAndWhoCan(t *testing.T) {
	api := st.api["structured"]
	alice := newPerson(t, "alice", api)
	r := alice.kubectl("get", "pods", "-n", "team-a")
	require.Equal(t, 0, r.code, r.stderr)

	// whoami -o jsonpath: kubectl auth whoami's paths, the cached token in
	// annotations.
	r = run(t, alice.env, false, st.ki, "whoami", "-o", `jsonpath={.status.userInfo.username} {.metadata.annotations.kubectl-impersonate\.io/token-cache}`, "--kubeconfig="+alice.kubeconfig)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "oidc:alice@example.com keyring", r.stdout)
	// whoami -o json is the object the pinned kubectl auth whoami -o json
	// prints, for alice (our annotations aside) and for the static-token admin.
	adminKC, err := st.adminKubeconfig(api)
	require.NoError(t, err)
	for _, who := range []struct {
		env        []string
		kubeconfig string
	}{{alice.env, alice.kubeconfig}, {baseEnv(t.TempDir()), adminKC}} {
		theirs := run(t, who.env, false, st.kubectl, "--kubeconfig="+who.kubeconfig, "auth", "whoami", "-o", "json")
		ours := run(t, who.env, false, st.ki, "whoami", "-o", "json", "--kubeconfig="+who.kubeconfig)
		require.Equal(t, 0, theirs.code, theirs.stderr)
		require.Equal(t, 0, ours.code, ours.stderr)
		assert.Equal(t, sameObject(t, theirs.stdout), sameObject(t, ours.stdout), "whoami -o json as kubectl auth whoami -o json")
	}

	r = run(t, alice.env, false, st.ki, "why", "list", "pods", "-n", "team-a", "--kubeconfig="+alice.kubeconfig)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "oidc:alice@example.com: may list pods in namespace team-a? yes")
	assert.Contains(t, r.stdout, `RoleBinding "developers-read-pods/team-a"`, "the authorizer's reason names the binding")
	assert.Contains(t, r.stdout, "you may not read RBAC objects here")
	r = run(t, alice.env, false, st.ki, "why", "delete", "pods", "-n", "team-a", "--kubeconfig="+alice.kubeconfig)
	assert.Equal(t, 1, r.code, "no: exit code 1, as kubectl auth can-i: %s", r.stderr)
	assert.Contains(t, r.stdout, "? no")
	// Short names and kinds, the exit codes and -q, as the pinned kubectl
	// answers the same questions on the same cluster.
	// kubectl names a subresource with --subresource (its TYPE/NAME is a
	// name); why takes RESOURCE/SUBRESOURCE.
	kubectlArgs := map[string][]string{"pods/log": {"pods", "--subresource=log"}, "pods/exec": {"pods", "--subresource=exec"}}
	for _, q := range [][]string{{"get", "po"}, {"get", "pod"}, {"list", "Pod"}, {"get", "pods.v1"}, {"get", "deployments.v1.apps"}, {"delete", "po"}, {"get", "cm"},
		{"get", "pods/log"}, {"create", "pods/exec"}} {
		theirs := q
		if k, ok := kubectlArgs[q[1]]; ok {
			theirs = append([]string{q[0]}, k...)
		}
		want := alice.kubectl(append([]string{"auth", "can-i"}, append(theirs, "-n", "team-a")...)...)
		got := run(t, alice.env, false, append([]string{st.ki, "why"}, append(q, "-n", "team-a", "--kubeconfig="+alice.kubeconfig)...)...)
		assert.Equal(t, want.code, got.code, "why %v: kubectl auth can-i says %q: %s", q, want.stdout, got.stdout+got.stderr)
		if q[1] == "pods/exec" {
			assert.Contains(t, got.stdout, "kubectl exec: fails (since Kubernetes 1.35 it needs get and create on pods/exec over WebSockets: get no, create no)")
		}
		quiet := run(t, alice.env, false, append([]string{st.ki, "why", "-q"}, append(q, "-n", "team-a", "--kubeconfig="+alice.kubeconfig)...)...)
		assert.Equal(t, want.code, quiet.code, "why -q %v", q)
		assert.Empty(t, quiet.stdout, "why -q %v", q)
	}
	// access --subresources says whether kubectl exec, attach and
	// port-forward work: get and create, as the cluster answers both.
	sub := run(t, alice.env, false, st.ki, "access", "-n", "team-a", "--subresources", "-o", "json", "--kubeconfig="+alice.kubeconfig)
	require.Equal(t, 0, sub.code, sub.stderr)
	var streaming struct {
		Streaming map[string]bool `json:"streaming"`
	}
	require.NoError(t, json.Unmarshal([]byte(sub.stdout), &streaming))
	for command, subresource := range map[string]string{"kubectl exec": "exec", "kubectl attach": "attach", "kubectl port-forward": "portforward"} {
		get := alice.kubectl("auth", "can-i", "get", "pods", "--subresource="+subresource, "-n", "team-a").code == 0
		create := alice.kubectl("auth", "can-i", "create", "pods", "--subresource="+subresource, "-n", "team-a").code == 0
		works, said := streaming.Streaming[command]
		assert.True(t, said, "access says whether %s works", command)
		assert.Equal(t, get && create, works, command)
	}

	admin, err := st.adminKubeconfig(api)
	require.NoError(t, err)
	env := baseEnv(t.TempDir())
	r = run(t, env, false, st.ki, "who-can", "list", "pods", "-n", "team-a", "--kubeconfig="+admin)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `RoleBinding/developers-read-pods\s+team-a\s+Role/pod-reader\s+Group:oidc:developers`, r.stdout)
	assert.Regexp(t, `ClusterRoleBinding/cluster-admin\s+\(cluster\)\s+ClusterRole/cluster-admin\s+Group:system:masters`, r.stdout)

	// As alice, through impersonation, why also lists the bindings.
	r = run(t, env, false, st.ki, "why", "get", "pods", "-n", "team-a", "--kubeconfig="+admin, "--as=oidc:alice@example.com", "--as-group=oidc:developers")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "? yes")
}

// TestInspectionRequestCounts: the API requests docs/inspection.md gives
// for each command, counted in kube-apiserver's audit log.
func TestInspectionRequestCounts(t *testing.T) {
	api := st.api["structured"]
	alice := newPerson(t, "alice", api)
	r := alice.kubectl("auth", "whoami")
	require.Equal(t, 0, r.code, r.stderr)
	admin, err := st.adminKubeconfig(api)
	require.NoError(t, err)
	aliceKC, adminKC := "--kubeconfig="+alice.kubeconfig, "--kubeconfig="+admin
	for _, tc := range []struct {
		args []string
		want int
		// discovery: the resource is resolved by discovery first (not
		// counted in want; docs/inspection.md says so): at most 2 requests.
		discovery bool
	}{
		{args: []string{"whoami", aliceKC}, want: 1},
		{args: []string{"groups", aliceKC}, want: 1},
		{args: []string{"claims", "--compare", "--oidc-issuer-url=" + st.issuer, "--oidc-client-id=" + publicClient,
			"--oidc-certificate-authority=" + st.caFile, "--oidc-username-claim=email", "--oidc-username-prefix=oidc:",
			"--oidc-groups-claim=groups", "--oidc-groups-prefix=oidc:", aliceKC}, want: 1},
		// The decision and the identity, then the four kinds of RBAC object.
		{args: []string{"why", "get", "pods", "-n", "team-a", adminKC}, want: 2 + 4, discovery: true},
		{args: []string{"who-can", "get", "pods", "-n", "team-a", adminKC}, want: 4, discovery: true},
	} {
		var res result
		n, uris := pluginRequests(t, api, func() { res = run(t, alice.env, false, append([]string{st.ki}, tc.args...)...) })
		require.Equal(t, 0, res.code, "%v: %s", tc.args, res.stderr)
		if tc.discovery {
			// Aggregated discovery, kubectl's disk cache: /api and /apis
			// cold, nothing warm (why warms it for who-can).
			d := n - len(withoutDiscovery(uris))
			assert.LessOrEqual(t, d, 2, "%s: discovery: %v", tc.args[0], uris)
			n = len(withoutDiscovery(uris))
		}
		assert.Equal(t, tc.want, n, "%s: requests %v", tc.args[0], uris)
	}
	// list pages by 500 objects.
	_, uris := pluginRequests(t, api, func() {
		res := run(t, alice.env, false, st.ki, "list", "configmaps", "-n", "team-a", adminKC)
		require.Equal(t, 0, res.code, res.stderr)
	})
	assert.True(t, slices.ContainsFunc(uris, func(u string) bool {
		return strings.HasPrefix(u, "/api/v1/namespaces/team-a/configmaps?") && strings.Contains(u, "limit=500")
	}), "the list asks 500 per page: %v", uris)
}

// Access-filtered listing: two projects of labelled namespaces; the group
// "viewer" may get two named ConfigMaps in one namespace of project a and
// every ConfigMap in the other, nothing in project b. Then 10 namespaces ×
// 100 ConfigMaps for the request counts.
// TestListObjectsLabelledWithAProject: the seed's model (objects, here a
// CRD's, all in one namespace, labelled with the project id) with
// list -l project=ID, by one rules review and by one access review per
// object: the same objects, and the request counts of each method.
// projectWidgets: the CRD widgets.example.com, six widgets labelled with
// projects a and b in the namespace shared-objects; the group project-a may
// get w-a-1, w-a-2 and w-b-3 (docs/inspection.md shows it).
func projectWidgets(t *testing.T, admin string) {
	t.Helper()
	kubectlApply(t, admin, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`)
	require.NoError(t, adminKubectl(t, admin, "", 120*time.Second, "wait", "--for=condition=Established", "--timeout=60s", "crd/widgets.example.com"))
	var m strings.Builder
	m.WriteString("apiVersion: v1\nkind: Namespace\nmetadata: {name: shared-objects}\n")
	for _, p := range []string{"a", "b"} {
		for i := 1; i <= 3; i++ {
			fmt.Fprintf(&m, "---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w-%s-%d, namespace: shared-objects, labels: {project: %s}}\n", p, i, p)
		}
	}
	m.WriteString(`---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: project-a-widgets, namespace: shared-objects}
rules:
- {apiGroups: [example.com], resources: [widgets], verbs: [get], resourceNames: [w-a-1, w-a-2, w-b-3]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: project-a, namespace: shared-objects}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: project-a-widgets}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: project-a}]
`)
	// The CRD's resource can take a moment to be served after Established.
	var applyErr error
	for range 30 {
		if applyErr = adminKubectl(t, admin, m.String(), 60*time.Second, "apply", "--server-side", "-f", "-"); applyErr == nil {
			break
		}
		time.Sleep(time.Second)
	}
	require.NoError(t, applyErr)
}

func TestListObjectsLabelledWithAProject(t *testing.T) {
	api := st.api["legacy"]
	admin, err := st.adminKubeconfig(api)
	require.NoError(t, err)
	env := baseEnv(t.TempDir())
	projectWidgets(t, admin)

	list := func(args ...string) result {
		t.Helper()
		return run(t, env, false, append([]string{st.ki, "list", "widgets.example.com", "-n", "shared-objects", "-l", "project=a",
			"--kubeconfig=" + admin, "--as=carol", "--as-group=project-a", "-v=1", "-o", "name"}, args...)...)
	}
	var rules, ssar result
	_, rulesURIs := pluginRequests(t, api, func() { rules = list() })
	require.Equal(t, 0, rules.code, rules.stderr)
	assert.Equal(t, "widget.example.com/w-a-1\nwidget.example.com/w-a-2\n", rules.stdout, "project a's objects carol may get")
	assert.Contains(t, rules.stderr, "2 of 3 widgets.example.com allowed to get for carol [project-a]; requests after discovery: 1 list, 1 rules reviews, 0 access reviews")
	_, ssarURIs := pluginRequests(t, api, func() { ssar = list("--method=ssar") })
	require.Equal(t, 0, ssar.code, ssar.stderr)
	// What the plugin reports, counted by the server (its audit log).
	assert.Len(t, withoutDiscovery(rulesURIs), 2, "1 list, 1 rules review: %v", rulesURIs)
	assert.Len(t, withoutDiscovery(ssarURIs), 4, "1 list, 3 access reviews: %v", ssarURIs)
	assert.Equal(t, rules.stdout, ssar.stdout, "the same objects by one access review per object")
	assert.Contains(t, ssar.stderr, "requests after discovery: 1 list, 0 rules reviews, 3 access reviews")
	t.Logf("list -l project=a over a CRD in one namespace: %s | %s", lastLine(rules.stderr), lastLine(ssar.stderr))
}

// withoutDiscovery drops API discovery requests (/api, /apis and each
// group version's resource list).
func withoutDiscovery(uris []string) []string {
	var out []string
	for _, u := range uris {
		path, _, _ := strings.Cut(u, "?")
		if path == "/api" || path == "/apis" || path == "/api/v1" || strings.HasPrefix(path, "/apis/") && strings.Count(path, "/") <= 3 {
			continue
		}
		out = append(out, u)
	}
	return out
}

// projectConfigMaps: namespaces proj-a-1 and proj-a-2 (labelled project=a) and
// proj-b-1, three configmaps each; the group viewer may get cm-1 and cm-2 in
// proj-a-1 and every configmap in proj-a-2 (docs/inspection.md shows it).
func projectConfigMaps(t *testing.T, admin string) {
	t.Helper()
	var m strings.Builder
	for _, ns := range []struct{ name, project string }{{"proj-a-1", "a"}, {"proj-a-2", "a"}, {"proj-b-1", "b"}} {
		fmt.Fprintf(&m, "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: %s, labels: {project: %s}}\n", ns.name, ns.project)
		for i := 1; i <= 3; i++ {
			fmt.Fprintf(&m, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d, namespace: %s, labels: {project: %s}}\ndata: {k: v}\n", i, ns.name, ns.project)
		}
	}
	m.WriteString(`---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: two-configmaps, namespace: proj-a-1}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [get], resourceNames: [cm-1, cm-2]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: viewer, namespace: proj-a-1}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: two-configmaps}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: viewer}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: configmap-viewer, namespace: proj-a-2}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: viewer, namespace: proj-a-2}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: configmap-viewer}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: viewer}]
`)
	kubectlApply(t, admin, m.String())
}

func TestAccessFilteredList(t *testing.T) {
	api := st.api["legacy"]
	admin, err := st.adminKubeconfig(api)
	require.NoError(t, err)
	env := baseEnv(t.TempDir())
	projectConfigMaps(t, admin)
	var m strings.Builder

	list := func(args ...string) result {
		t.Helper()
		return run(t, env, false, append([]string{st.ki, "list", "--kubeconfig=" + admin, "--as=viewer-user", "--as-group=viewer", "-v=1"}, args...)...)
	}
	rows := func(table string) []string {
		var out []string
		for _, line := range strings.Split(strings.TrimSpace(table), "\n")[1:] {
			f := strings.Fields(line)
			out = append(out, f[0]+"/"+f[1]+" "+f[3])
		}
		return out
	}
	r := list("configmaps", "--project-label=project=a")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, []string{"proj-a-1/cm-1 get", "proj-a-1/cm-2 get", "proj-a-2/cm-1 get", "proj-a-2/cm-2 get", "proj-a-2/cm-3 get"}, rows(r.stdout))
	// The RBAC objects read once with the admin's rights and checked (a
	// rules review and a SelfSubjectReview as viewer-user, 4 lists).
	assert.Contains(t, r.stderr, "5 of 6 configmaps allowed to get for viewer-user [viewer]; requests after discovery: 3 list, 0 rules reviews, 0 access reviews, 6 to read the RBAC objects and check them (the rules of 2 namespaces from them)")
	perNS := list("configmaps", "--project-label=project=a", "--rbac-objects=false")
	require.Equal(t, 0, perNS.code, perNS.stderr)
	assert.Equal(t, rows(r.stdout), rows(perNS.stdout), "the same objects by one rules review per namespace")
	assert.Contains(t, perNS.stderr, "requests after discovery: 3 list, 2 rules reviews, 0 access reviews\n")

	// The rules review and an access review per object agree.
	r2 := list("cm", "--project-label=project=a", "--method=ssar")
	require.Equal(t, 0, r2.code, r2.stderr)
	assert.Equal(t, rows(r.stdout), rows(r2.stdout), "the same objects by access reviews alone")
	assert.Contains(t, r2.stderr, "0 rules reviews, 6 access reviews")

	r = list("configmaps", "--project-label=project=b")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Empty(t, r.stdout, "nothing in project b")
	assert.Contains(t, r.stderr, "0 of 3 configmaps allowed")

	r = list("configmaps", "--project-label=project=nonexistent")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Empty(t, r.stdout)
	assert.Contains(t, r.stderr, "no namespace carries the label project=nonexistent")

	r = list("configmaps", "-n", "proj-a-1", "--show-denied", "--verb=get", "--verb=delete")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "get is granted for other resourceNames only")
	assert.Regexp(t, `(?m)^cm-3\s+\S+\s+<none>\s+get: get is granted for other resourceNames only; delete: no rule grants delete on configmaps$`, r.stdout)

	r = list("configmaps", "--project-label=project=a", "-o", "json")
	require.Equal(t, 0, r.code, r.stderr)
	var l struct {
		Kind  string `json:"kind"`
		Items []struct {
			Kind     string `json:"kind"`
			Metadata struct{ Namespace, Name string }
			Data     map[string]string `json:"data"`
		} `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &l))
	assert.Equal(t, "List", l.Kind)
	require.Len(t, l.Items, 5)
	assert.Equal(t, "ConfigMap", l.Items[0].Kind)
	assert.Equal(t, "v", l.Items[0].Data["k"], "whole objects with -o json")

	r = list("configmaps", "-n", "proj-a-1", "-o", "name")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "configmap/cm-1\nconfigmap/cm-2\n", r.stdout)

	// 10 namespaces × 100 ConfigMaps; the group may get half of them by name.
	m.Reset()
	names := make([]string, 50)
	for i := range names {
		names[i] = fmt.Sprintf("cm-%03d", i)
	}
	m.WriteString(fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: half-the-configmaps}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [get], resourceNames: [%s]}
`, strings.Join(names, ", ")))
	for n := range 10 {
		ns := fmt.Sprintf("scale-%d", n)
		fmt.Fprintf(&m, "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: %s, labels: {project: scale}}\n", ns)
		fmt.Fprintf(&m, "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: viewer, namespace: %s}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: half-the-configmaps}\nsubjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: viewer}]\n", ns)
	}
	kubectlApply(t, admin, m.String())
	// The 1000 ConfigMaps by 16 concurrent POSTs (kubectl would take a minute).
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	var failures atomic.Int32
	client := st.tlsClient()
	for n := range 10 {
		for i := range 100 {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%03d"}}`, i)
				req, _ := http.NewRequest("POST", fmt.Sprintf("%s/api/v1/namespaces/scale-%d/configmaps", api.url, n), strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+adminToken)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					failures.Add(1)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusConflict {
					failures.Add(1)
				}
			}()
		}
	}
	wg.Wait()
	require.Zero(t, failures.Load(), "creating the ConfigMaps")
	start := time.Now()
	var rulesURIs, ssarURIs, localURIs []string
	_, rulesURIs = pluginRequests(t, api, func() { r = list("configmaps", "--project-label=project=scale", "--rbac-objects=false") })
	rulesTime := time.Since(start)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Len(t, rows(r.stdout), 500)
	assert.Contains(t, r.stderr, "500 of 1000 configmaps allowed to get for viewer-user [viewer]; requests after discovery: 11 list, 10 rules reviews, 0 access reviews\n")
	start = time.Now()
	var local result
	_, localURIs = pluginRequests(t, api, func() { local = list("configmaps", "--project-label=project=scale") })
	localTime := time.Since(start)
	require.Equal(t, 0, local.code, local.stderr)
	assert.Equal(t, rows(r.stdout), rows(local.stdout), "the same 500 objects from the RBAC objects")
	assert.Contains(t, local.stderr, "requests after discovery: 11 list, 0 rules reviews, 0 access reviews, 6 to read the RBAC objects and check them (the rules of 10 namespaces from them)")
	assert.Len(t, withoutDiscovery(localURIs), 17, "requests after discovery, RBAC objects: %v", withoutDiscovery(localURIs))
	start = time.Now()
	_, ssarURIs = pluginRequests(t, api, func() { r2 = list("configmaps", "--project-label=project=scale", "--method=ssar") })
	ssarTime := time.Since(start)
	require.Equal(t, 0, r2.code, r2.stderr)
	assert.Equal(t, rows(r.stdout), rows(r2.stdout), "the same 500 objects by 1000 access reviews")
	assert.Contains(t, r2.stderr, "0 rules reviews, 1000 access reviews")
	// The server's counts (its audit log): 1 namespace list, 10 object
	// lists and 10 rules reviews, against 11 lists and 1000 access reviews.
	assert.Len(t, withoutDiscovery(rulesURIs), 21, "requests after discovery, rules reviews")
	assert.Len(t, withoutDiscovery(ssarURIs), 1011, "requests after discovery, one access review per object")
	t.Logf("10 namespaces × 100 ConfigMaps: RBAC objects: %d requests after discovery, %s; rules reviews: %d requests, %s; access review per object: %d requests, %s",
		len(withoutDiscovery(localURIs)), localTime.Round(time.Millisecond),
		len(withoutDiscovery(rulesURIs)), rulesTime.Round(time.Millisecond), len(withoutDiscovery(ssarURIs)), ssarTime.Round(time.Millisecond))
}

// sameObject decodes a printed object for comparison: without this plugin's
// annotations, and without metadata's null creationTimestamp (apimachinery
// before 1.37 prints it, later ones omit it).
func sameObject(t *testing.T, printed string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(printed), &m), printed)
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "annotations")
		// The server stamps each review with the time it answered: two
		// reviews a second apart differ there (a CI run saw :38 and :39).
		// What is meant to be equal is that each carries the server's
		// time, or neither does.
		if ts, ok := md["creationTimestamp"].(string); ok {
			_, err := time.Parse(time.RFC3339, ts)
			require.NoError(t, err, "creationTimestamp of %s", printed)
			md["creationTimestamp"] = "(the server's time)"
		} else {
			delete(md, "creationTimestamp")
		}
	}
	return m
}
