//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRBACGraphInChromium: access --graph -o html of a service account on
// kube-apiserver, opened in headless Chromium with no network at all
// (unshare --net): the page's script runs and every node of -o json is in
// the page; the escalation path (impersonate) is marked. who-can --graph's
// SVG holds its nodes too. The screenshot of docs/inspection.md is this
// test's (KI_E2E_UPDATE_IMAGES=1 writes it to docs/img).
func TestRBACGraphInChromium(t *testing.T) {
	onFirstVersionOnly(t)
	chromium := os.Getenv("E2E_CHROMIUM")
	require.NotEmpty(t, chromium, "test/e2e/run.sh sets E2E_CHROMIUM")
	api := st.api["legacy"]
	admin, err := st.adminKubeconfig(api)
	require.NoError(t, err)
	kubectlApply(t, admin, `apiVersion: v1
kind: Namespace
metadata: {name: graph}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: deployer, namespace: graph}
rules:
- {apiGroups: [apps], resources: [deployments], verbs: [get, list, watch, create, patch]}
- {apiGroups: [""], resources: [secrets], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: deployers, namespace: graph}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: deployer}
subjects: [{kind: Group, name: "system:serviceaccounts:graph", apiGroup: rbac.authorization.k8s.io}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: graph-impersonator}
rules: [{apiGroups: [""], resources: [users], resourceNames: [bob], verbs: [impersonate]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: graph-ci-as-bob}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: graph-impersonator}
subjects: [{kind: ServiceAccount, name: ci, namespace: graph}]
`)
	dir := filepath.Join(st.logs, "rbac-graph")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	env := baseEnv(t.TempDir())
	as := []string{"--kubeconfig=" + admin, "--as=system:serviceaccount:graph:ci", "-n", "graph"}
	r := run(t, env, false, append([]string{st.ki, "access", "--graph", "-o", "json"}, as...)...)
	require.Equal(t, 0, r.code, r.stderr)
	var g struct {
		Nodes []struct {
			ID, Kind, Label, Escalation string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &g))
	var ids, marked []string
	for _, n := range g.Nodes {
		ids = append(ids, n.ID)
		if n.Escalation != "" {
			marked = append(marked, n.ID)
		}
	}
	escalations := len(marked)
	assert.Contains(t, ids, "identity:system:serviceaccount:graph:ci")
	assert.Contains(t, ids, "group:system:serviceaccounts:graph")
	assert.Contains(t, ids, "binding:ClusterRoleBinding//graph-ci-as-bob")
	assert.Contains(t, ids, "binding:RoleBinding/graph/deployers")
	// The risks (pkg/cluster/risk): impersonate users bob (escalation),
	// create and patch deployments (workload), get secrets (credentials).
	assert.ElementsMatch(t, []string{"grant:ClusterRole/graph-impersonator/0", "grant:Role/graph/deployer/0",
		"grant:Role/graph/deployer/1"}, marked, "%v", g.Nodes)

	page := filepath.Join(dir, "access.html")
	r = run(t, env, false, append([]string{st.ki, "access", "--graph", "-o", "html"}, as...)...)
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, os.WriteFile(page, []byte(r.stdout), 0o644))
	offline := func(args ...string) result {
		t.Helper()
		return run(t, env, false, append([]string{"unshare", "--net", chromium, "--headless", "--no-sandbox",
			"--disable-gpu", "--user-data-dir=" + filepath.Join(t.TempDir(), "profile")}, args...)...)
	}
	r = offline("--dump-dom", "file://"+page)
	require.Equal(t, 0, r.code, r.stderr)
	m := regexp.MustCompile(`<body data-nodes="(\d+)">`).FindStringSubmatch(r.stdout)
	require.NotNil(t, m, "the page's script ran (it marks the body): %s", r.stdout[:min(len(r.stdout), 500)])
	n, _ := strconv.Atoi(m[1])
	assert.Equal(t, len(g.Nodes), n, "every node is drawn")
	for _, id := range ids {
		assert.Contains(t, r.stdout, `data-node="`+html.EscapeString(id)+`"`, id)
	}
	assert.Equal(t, escalations, strings.Count(r.stdout, `class="node grant escalation"`)+
		strings.Count(r.stdout, `class="node target escalation"`))
	shot := filepath.Join(dir, "access-graph.png")
	r = offline("--screenshot="+shot, "--window-size=1200,520", "file://"+page)
	require.Equal(t, 0, r.code, r.stderr)
	fi, err := os.Stat(shot)
	require.NoError(t, err)
	assert.Greater(t, fi.Size(), int64(10000), "a picture")
	if os.Getenv("KI_E2E_UPDATE_IMAGES") != "" {
		b, err := os.ReadFile(shot)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile("../../docs/img/access-graph.png", b, 0o644))
	}

	// A person logged in through Dex: the claims that made her identity
	// (email, groups) point to it, as the server answered.
	kubectlApply(t, admin, fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: graph-rbac-reader}
rules: [{apiGroups: [rbac.authorization.k8s.io], resources: ["*"], verbs: [list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: graph-alice-reads-rbac}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: graph-rbac-reader}
subjects: [{kind: User, name: "%salice@example.com", apiGroup: rbac.authorization.k8s.io}]
`, api.usernamePrefix))
	alice := newPerson(t, "alice", api)
	r = alice.kubectl("get", "pods", "-n", "team-a")
	require.Equal(t, 0, r.code, r.stderr)
	r = alice.plugin(nil, "access", "--graph", "-o", "dot", "-n", "team-a", "--kubeconfig="+alice.kubeconfig)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, fmt.Sprintf(`"claim:email=alice@example.com" -> "identity:%salice@example.com";`,
		api.usernamePrefix))
	assert.Regexp(t, `"claim:groups=\w+" -> "group:`, r.stdout)

	r = run(t, env, false, st.ki, "who-can", "impersonate", "users", "bob", "--graph", "-o", "svg",
		"--kubeconfig="+admin)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `data-node="binding:ClusterRoleBinding//graph-ci-as-bob"`)
	assert.Contains(t, r.stdout, `data-node="identity:ServiceAccount/graph/ci"`)
	assert.Contains(t, r.stdout, `class="node target escalation"`)
}
