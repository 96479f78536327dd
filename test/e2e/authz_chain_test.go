//go:build e2e

// The authorizer chain of a managed cluster: a webhook before Node and RBAC
// (kube-apiserver's --authorization-config), where a rules review cannot
// see what the webhook decides.

package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWebhookAuthorizerChain: the webhook denies alice get pods in team-a
// (RBAC grants it) and allows her delete configmaps there (RBAC does not).
// kubectl auth can-i is the oracle: why's exit codes, every cell of access
// and list's objects answer as the cluster does, with the cells the webhook
// decided marked; who-can says it shows RBAC alone.
func TestWebhookAuthorizerChain(t *testing.T) {
	api := st.api["webhook"]
	alice := newPerson(t, "alice", api)
	r := alice.kubectl("auth", "whoami")
	require.Equal(t, 0, r.code, r.stderr)
	kc := "--kubeconfig=" + alice.kubeconfig
	asked := st.webhook.Asked()

	// The cluster's answers, and why's: the same exit codes, the webhook's
	// reason named.
	for _, q := range []struct {
		args   []string
		want   int
		reason string
	}{
		{[]string{"get", "pods"}, 1, webhookDeniedReason},
		{[]string{"list", "pods"}, 0, "RBAC"},
		{[]string{"delete", "configmaps"}, 0, webhookAllowedReason},
		{[]string{"delete", "cm"}, 0, webhookAllowedReason},
		{[]string{"get", "configmaps"}, 1, "may get configmaps in namespace team-a? no"},
	} {
		can := alice.kubectl(append([]string{"auth", "can-i"}, append(q.args, "-n", "team-a")...)...)
		assert.Equal(t, q.want, can.code, "kubectl auth can-i %v: %s", q.args, can.stdout+can.stderr)
		why := run(t, alice.env, false, append([]string{st.ki, "why"}, append(q.args, "-n", "team-a", kc)...)...)
		assert.Equal(t, can.code, why.code, "why %v as kubectl auth can-i: %s", q.args, why.stdout+why.stderr)
		assert.Contains(t, why.stdout, q.reason, "why %v names the authorizer's reason", q.args)
	}
	assert.Greater(t, st.webhook.Asked(), asked, "the webhook was asked")

	// access: every cell as one access review per cell answers it.
	byRules := accessMatrix(t, alice.env, kc, "-n", "team-a")
	bySSAR := accessMatrix(t, alice.env, kc, "-n", "team-a", "--method=ssar")
	assert.True(t, byRules.Incomplete, "a webhook makes the rules review incomplete")
	assert.Equal(t, bySSAR.allowed(), byRules.allowed(), "access answers as the cluster does, every cell")
	assert.False(t, byRules.allowed()["pods get"], "the webhook's denial")
	assert.True(t, byRules.allowed()["pods list"], "RBAC's grant")
	assert.True(t, byRules.allowed()["configmaps delete"], "the webhook's grant")
	raw := run(t, alice.env, false, st.ki, "access", "-o", "json", kc, "-n", "team-a")
	require.Equal(t, 0, raw.code, raw.stderr)
	var cells struct {
		Rows []struct {
			Resource string `json:"resource"`
			Cells    map[string]struct {
				DecidedElsewhere bool `json:"decidedElsewhere"`
			} `json:"verbs"`
		} `json:"rows"`
	}
	require.NoError(t, json.Unmarshal([]byte(raw.stdout), &cells))
	marked := map[string]bool{}
	for _, row := range cells.Rows {
		for v, c := range row.Cells {
			if c.DecidedElsewhere {
				marked[row.Resource+" "+v] = true
			}
		}
	}
	assert.Equal(t, map[string]bool{"pods get": true, "pods watch": true, "configmaps delete": true}, marked, "the cells the webhook decided against RBAC")
	table := run(t, alice.env, false, st.ki, "access", kc, "-n", "team-a", "--verb=get,list,delete")
	require.Equal(t, 0, table.code, table.stderr)
	assert.Contains(t, table.stdout, "the rules review is incomplete")
	assert.Regexp(t, `(?m)^pods\s+✗\*!\s+✔\*\s+✗\*\s*$`, table.stdout)

	// list, as an admin about alice: the objects the webhook lets her delete.
	admin, err := st.adminKubeconfig(api)
	require.NoError(t, err)
	require.NoError(t, adminKubectl(t, admin, "", 60*time.Second, "-n", "team-a", "create", "configmap", "chain-a"))
	require.NoError(t, adminKubectl(t, admin, "", 60*time.Second, "-n", "team-a", "create", "configmap", "chain-b"))
	env := baseEnv(t.TempDir())
	l := run(t, env, false, st.ki, "list", "configmaps", "-n", "team-a", "--verb=delete", "-o", "name", "--kubeconfig="+admin,
		"--as=oidc:alice@example.com", "--as-group=oidc:developers")
	require.Equal(t, 0, l.code, l.stderr)
	assert.Contains(t, l.stdout, "configmap/chain-a")
	assert.Contains(t, l.stdout, "configmap/chain-b")
	// -o wide says who decided: the webhook, against RBAC's rules.
	l = run(t, env, false, st.ki, "list", "configmaps", "-n", "team-a", "--verb=delete", "-o", "wide", "--kubeconfig="+admin,
		"--as=oidc:alice@example.com", "--as-group=oidc:developers")
	require.Equal(t, 0, l.code, l.stderr)
	assert.Regexp(t, `(?m)^chain-a\s.*access-review \(another authorizer: delete\)`, l.stdout)
	// why, once alice's group may read RBAC objects: the bindings, and
	// that another authorizer decided against them.
	kubectlApply(t, admin, `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: rbac-reader}
rules:
- {apiGroups: [rbac.authorization.k8s.io], resources: [roles, rolebindings, clusterroles, clusterrolebindings], verbs: [get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: developers-read-rbac}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: rbac-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: oidc:developers}
`)
	asAlice := []string{"--kubeconfig=" + admin, "-n", "team-a", "--as=oidc:alice@example.com", "--as-group=oidc:developers"}
	wy := run(t, env, false, append([]string{st.ki, "why", "get", "pods"}, asAlice...)...)
	assert.Equal(t, 1, wy.code, wy.stdout+wy.stderr)
	assert.Contains(t, wy.stdout, "RBAC grants it to you (the bindings below), but another authorizer of the chain (such as a webhook) denied it.")
	assert.Contains(t, wy.stdout, "RoleBinding/developers-read-pods")
	wy = run(t, env, false, append([]string{st.ki, "why", "delete", "configmaps"}, asAlice...)...)
	assert.Equal(t, 0, wy.code, wy.stdout+wy.stderr)
	assert.Contains(t, wy.stdout, "No RBAC binding grants it to you: another authorizer of the chain (such as a webhook) allowed it.")
	// RBAC now grants the developers get on configmaps; the webhook denies
	// alice chain-a by name: a rules review would keep it, the cluster does not.
	kubectlApply(t, admin, `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: configmap-reader, namespace: team-a}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: developers-read-configmaps, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: configmap-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: oidc:developers}
`)
	for _, name := range []string{"chain-a", "chain-b"} {
		can := run(t, env, false, st.kubectl, "--kubeconfig="+admin, "auth", "can-i", "get", "configmaps/"+name, "-n", "team-a",
			"--as=oidc:alice@example.com", "--as-group=oidc:developers")
		assert.Equal(t, map[string]int{"chain-a": 1, "chain-b": 0}[name], can.code, "kubectl auth can-i get configmaps/%s: %s", name, can.stdout)
	}
	l = run(t, env, false, st.ki, "list", "configmaps", "-n", "team-a", "--verb=get", "-o", "name", "--kubeconfig="+admin,
		"--as=oidc:alice@example.com", "--as-group=oidc:developers")
	require.Equal(t, 0, l.code, l.stderr)
	assert.Contains(t, l.stdout, "configmap/chain-b", "RBAC's grant, confirmed")
	assert.NotContains(t, l.stdout, "chain-a", "the webhook's denial of what RBAC grants")

	// who-can reads RBAC, and says so where it answers; --verify asks the
	// chain about each subject: the webhook denies the developers group
	// watch, as kubectl auth can-i --as-group finds too.
	w := run(t, env, false, st.ki, "who-can", "get", "pods", "-n", "team-a", "--kubeconfig="+admin)
	require.Equal(t, 0, w.code, w.stderr)
	assert.Contains(t, w.stdout, "RoleBinding/developers-read-pods")
	assert.True(t, strings.Contains(w.stdout, "These are the RBAC bindings only"), "who-can says it shows RBAC alone: %s", w.stdout)
	can := run(t, env, false, st.kubectl, "--kubeconfig="+admin, "auth", "can-i", "watch", "pods", "-n", "team-a", "--as=someone", "--as-group=oidc:developers")
	assert.Equal(t, 1, can.code, "the cluster denies the developers group watch: %s", can.stdout)
	v := run(t, env, false, st.ki, "who-can", "watch", "pods", "-n", "team-a", "--verify", "--kubeconfig="+admin)
	require.Equal(t, 0, v.code, v.stderr)
	assert.Contains(t, v.stdout, "DENIES these subjects although RBAC grants them")
	assert.Contains(t, v.stdout, "Group:oidc:developers in team-a: "+webhookGroupReason)
	assert.NotContains(t, v.stdout, "Group:system:masters:", "cluster-admin's group is allowed")
	// -A: a RoleBinding's subjects are asked in its namespace, not cluster-wide.
	v = run(t, env, false, st.ki, "who-can", "watch", "pods", "-A", "--verify", "--kubeconfig="+admin)
	require.Equal(t, 0, v.code, v.stderr)
	assert.Contains(t, v.stdout, "Group:oidc:developers in team-a: "+webhookGroupReason)
	assert.Equal(t, 1, strings.Count(v.stdout, ": e2e webhook"), "no other subject is denied: %s", v.stdout)
	v = run(t, env, false, st.ki, "who-can", "list", "pods", "-n", "team-a", "--verify", "--kubeconfig="+admin)
	require.Equal(t, 0, v.code, v.stderr)
	assert.Contains(t, v.stdout, "Verified: the authorizer chain allows every subject listed")
}
