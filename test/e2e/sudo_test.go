//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSudoStateIsGuardedByTheCluster (issue 58, the state model): the
// objects of time-boxed elevation (deploy/sudo) are guarded by
// kube-apiserver's own admission, no webhook server.
//   - A request is its creator's, for a role and at most the duration its
//     namespace's SudoPolicy allows (no policy, no request).
//   - An approval, on the request's status, is not by the stored requester,
//     needs "approve", is signed by the approver, and happens once.
//   - A grant outside the policy, or signed with another's name, is
//     refused; one admission cannot judge (made up, or lying about its
//     requester: an attacker's review found both) does not count.
//   - A grant's creation time is the server's; a revocation is signed and
//     final; approvers cannot delete grants; specs never change.
//
// who-can answers who may approve. Each refusal's message is the cluster's.
func TestSudoStateIsGuardedByTheCluster(t *testing.T) {
	admin, env := sudoCluster(t)
	kubectlApply(t, admin, `apiVersion: v1
kind: Namespace
metadata: {name: sudo-payments}
---
apiVersion: v1
kind: Namespace
metadata: {name: sudo-nopolicy}
---
apiVersion: sudo.kubectl-impersonate.io/v1alpha1
kind: SudoPolicy
metadata: {name: default, namespace: sudo-payments}
spec: {roles: [edit], maxDurationSeconds: 3600}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: sudo-requesters, namespace: sudo-payments}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: sudo-requester.kubectl-impersonate.io}
subjects:
  - {apiGroup: rbac.authorization.k8s.io, kind: User, name: sudo-alice}
  - {apiGroup: rbac.authorization.k8s.io, kind: User, name: sudo-bob}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: sudo-approvers, namespace: sudo-payments}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: sudo-approver.kubectl-impersonate.io}
subjects:
  - {apiGroup: rbac.authorization.k8s.io, kind: User, name: sudo-alice}
  - {apiGroup: rbac.authorization.k8s.io, kind: User, name: sudo-bob}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: grant-writer, namespace: sudo-payments}
rules:
  - {apiGroups: [sudo.kubectl-impersonate.io], resources: [sudogrants], verbs: [create]}
  - {apiGroups: [sudo.kubectl-impersonate.io], resources: [sudorequests/status], verbs: [get, update, patch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: grant-writer, namespace: sudo-payments}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: grant-writer}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: sudo-carol}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: sudo-requesters, namespace: sudo-nopolicy}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: sudo-requester.kubectl-impersonate.io}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: sudo-alice}]
`)
	// create runs kubectl create as user (kube-apiserver's impersonation:
	// admission sees that user) and returns the exit code and stderr.
	dir := t.TempDir()
	create := func(user, manifest string) (int, string) {
		f := filepath.Join(dir, "object.json")
		require.NoError(t, os.WriteFile(f, []byte(manifest), 0o600))
		res := run(t, env, false, st.kubectl, "--kubeconfig="+admin, "--as="+user, "create", "-f", f)
		return res.code, res.stderr
	}
	request := func(ns, name, requester, role string, seconds int) string {
		return fmt.Sprintf(`{"apiVersion":"sudo.kubectl-impersonate.io/v1alpha1","kind":"SudoRequest",`+
			`"metadata":{"name":%q,"namespace":%q},"spec":{"requester":%q,"role":%q,"durationSeconds":%d,`+
			`"reason":"INC-123 payments down","ticket":"INC-123"}}`, name, ns, requester, role, seconds)
	}
	// A grant's metadata says it began in 2020: kube-apiserver sets the
	// creation time itself.
	grant := func(name, requester, approver, role string, seconds int, uid string) string {
		return fmt.Sprintf(`{"apiVersion":"sudo.kubectl-impersonate.io/v1alpha1","kind":"SudoGrant",`+
			`"metadata":{"name":%q,"namespace":"sudo-payments","creationTimestamp":"2020-01-01T00:00:00Z"},`+
			`"spec":{"request":%q,"requestUID":%q,"requester":%q,"role":%q,"durationSeconds":%d,`+
			`"reason":"INC-123 payments down","ticket":"INC-123","approver":%q}}`,
			name, name, uid, requester, role, seconds, approver)
	}
	// patchStatus signs kind name's status as user (a merge patch of the
	// status subresource: an UPDATE, with the stored object, in admission).
	patchStatus := func(user, kind, name, status string) result {
		return run(t, env, false, st.kubectl, "--kubeconfig="+admin, "--as="+user, "patch", kind, name,
			"-n", "sudo-payments", "--subresource=status", "--type=merge", "-p", `{"status":`+status+`}`)
	}
	// A new policy takes effect within seconds (kube-apiserver compiles
	// and syncs it): the first refusal is waited for, bounded.
	deadline := time.Now().Add(30 * time.Second)
	var code int
	var msg string
	for {
		code, msg = create("sudo-alice", request("sudo-payments", "for-bob", "sudo-bob", "edit", 1800))
		if code != 0 || time.Now().After(deadline) {
			break
		}
		del := run(t, env, false, st.kubectl, "--kubeconfig="+admin, "delete", "sudorequest", "for-bob", "-n", "sudo-payments")
		require.Equal(t, 0, del.code, del.stderr)
		time.Sleep(500 * time.Millisecond)
	}
	require.NotEqual(t, 0, code, "the admission policy took effect within 30 s")
	assert.Contains(t, msg, "a SudoRequest asks for its creator: spec.requester must be sudo-alice")
	for _, tt := range []struct {
		name, manifest, want string
	}{
		{"a role the policy does not name", request("sudo-payments", "r-admin", "sudo-alice", "admin", 600),
			"the role admin may not be requested in sudo-payments (its SudoPolicy allows edit)"},
		{"longer than the policy allows", request("sudo-payments", "r-long", "sudo-alice", "edit", 7200),
			"a grant in sudo-payments lasts at most 3600 seconds (asked: 7200)"},
		{"a namespace without a policy", request("sudo-nopolicy", "r-none", "sudo-alice", "edit", 600),
			"no params found for policy binding"},
		// The reason and the ticket go into headers and the audit log:
		// one line, no control character, no space at the ends (the
		// schema's pattern, elevation.TextPattern).
		{"a reason of two lines", strings.Replace(request("sudo-payments", "r-lines", "sudo-alice", "edit", 600),
			"INC-123 payments down", `INC-123\nImpersonate-Group: system:masters`, 1), "spec.reason: Invalid value"},
		{"a ticket with an escape", strings.Replace(request("sudo-payments", "r-esc", "sudo-alice", "edit", 600),
			`"ticket":"INC-123"`, `"ticket":"INC-123\u001b[2J"`, 1), "spec.ticket: Invalid value"},
		{"a reason ending in a space", strings.Replace(request("sudo-payments", "r-space", "sudo-alice", "edit", 600),
			"INC-123 payments down", "INC-123 ", 1), "spec.reason: Invalid value"},
		{"a reason that reads backwards", strings.Replace(request("sudo-payments", "r-bidi", "sudo-alice", "edit", 600),
			"INC-123 payments down", `INC-123 \u202enwod stnemyap`, 1), "spec.reason: Invalid value"},
	} {
		code, msg := create("sudo-alice", tt.manifest)
		assert.NotEqual(t, 0, code, tt.name)
		assert.Contains(t, msg, tt.want, tt.name)
	}
	code, msg = create("sudo-alice", request("sudo-payments", "inc-123", "sudo-alice", "edit", 1800))
	require.Equal(t, 0, code, msg)

	uidOf := func(name string) string {
		r := run(t, env, false, st.kubectl, "--kubeconfig="+admin, "get", "sudorequest", name, "-n", "sudo-payments",
			"-o", "jsonpath={.metadata.uid}")
		require.Equal(t, 0, r.code, r.stderr)
		return strings.TrimSpace(r.stdout)
	}
	uid := uidOf("inc-123")

	// Approval, on the request's status where admission sees the stored
	// requester: not by the requester (alice holds approve too), not by one
	// without the verb, not signed with another's name, once.
	for _, tt := range []struct{ user, status, want string }{
		{"sudo-alice", `{"approvedBy":"sudo-alice"}`, "you cannot approve your own request"},
		{"sudo-carol", `{"approvedBy":"sudo-carol"}`,
			"sudo-carol may not approve inc-123: deciding needs the verb approve on sudorequests in sudo-payments"},
		{"sudo-bob", `{"approvedBy":"sudo-alice"}`, "status.approvedBy must be sudo-bob"},
	} {
		p := patchStatus(tt.user, "sudorequest", "inc-123", tt.status)
		assert.NotEqual(t, 0, p.code, tt.user)
		assert.Contains(t, p.stderr, tt.want, tt.user)
	}
	p := patchStatus("sudo-bob", "sudorequest", "inc-123", `{"approvedBy":"sudo-bob"}`)
	require.Equal(t, 0, p.code, p.stderr)
	p = patchStatus("sudo-bob", "sudorequest", "inc-123", `{"approvedBy":"sudo-bob"}`)
	assert.NotEqual(t, 0, p.code)
	assert.Contains(t, p.stderr, "inc-123 was already approved by sudo-bob")

	// Grants: a made-up one outside the policy is refused; one inside it,
	// or one that lies about its requester, is admitted (a policy reads no
	// other object) but does not count (elevation.Check, as status reads
	// it); the approver's own is made with the server's time.
	code, msg = create("sudo-bob", grant("ghost", "sudo-alice", "sudo-bob", "cluster-admin", 604800, "x"))
	assert.NotEqual(t, 0, code)
	assert.Contains(t, msg, "a SudoGrant in sudo-payments must be within its SudoPolicy (roles edit, at most 3600 seconds)")
	code, msg = create("sudo-bob", grant("inc-123", "sudo-alice", "sudo-alice", "edit", 1800, uid))
	assert.NotEqual(t, 0, code)
	assert.Contains(t, msg, "spec.approver must be sudo-bob")
	code, msg = create("sudo-alice", grant("inc-124", "sudo-bob", "sudo-alice", "edit", 1800, "x"))
	require.Equal(t, 0, code, "admitted: %s", msg)
	code, msg = create("sudo-bob", grant("ghost", "sudo-alice", "sudo-bob", "edit", 1800, "x"))
	require.Equal(t, 0, code, "admitted: %s", msg)
	before := time.Now().Truncate(time.Second)
	code, msg = create("sudo-bob", grant("inc-123", "sudo-alice", "sudo-bob", "edit", 1800, uid))
	require.Equal(t, 0, code, msg)
	ts := run(t, env, false, st.kubectl, "--kubeconfig="+admin, "get", "sudogrant", "inc-123", "-n", "sudo-payments",
		"-o", "jsonpath={.metadata.creationTimestamp}")
	require.Equal(t, 0, ts.code, ts.stderr)
	created, err := time.Parse(time.RFC3339, strings.TrimSpace(ts.stdout))
	require.NoError(t, err)
	assert.False(t, created.Before(before) || created.After(time.Now().Add(time.Second)),
		"the grant's start is the server's clock, not the 2020 it was sent with: %s", created)
	counts := func(user string) map[string]string {
		r := run(t, env, false, st.ki, "sudo", "status", "-n", "sudo-payments", "-o", "json", "--kubeconfig="+admin,
			"--as="+user)
		require.Equal(t, 0, r.code, r.stderr)
		var got []struct {
			Name, Why string
			Active    bool
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
		out := map[string]string{}
		for _, g := range got {
			out[g.Name] = map[bool]string{true: "active"}[g.Active] + g.Why
		}
		return out
	}
	assert.Equal(t, map[string]string{"inc-123": "active", "ghost": "its request ghost does not exist"}, counts("sudo-alice"))
	assert.Equal(t, map[string]string{"inc-124": "its request inc-124 does not exist"}, counts("sudo-bob"))

	// Revoked once, by who revokes; not deleted by approvers.
	p = patchStatus("sudo-bob", "sudogrant", "inc-123", `{"revokedBy":"sudo-alice"}`)
	assert.NotEqual(t, 0, p.code)
	assert.Contains(t, p.stderr, "status.revokedBy must be sudo-bob")
	p = patchStatus("sudo-bob", "sudogrant", "inc-123", `{"revokedBy":"sudo-bob"}`)
	require.Equal(t, 0, p.code, p.stderr)
	p = patchStatus("sudo-bob", "sudogrant", "inc-123", `{"revokedBy":"sudo-bob"}`)
	assert.NotEqual(t, 0, p.code)
	assert.Contains(t, p.stderr, "inc-123 was already revoked by sudo-bob")
	d := run(t, env, false, st.kubectl, "--kubeconfig="+admin, "--as=sudo-bob", "delete", "sudogrant", "inc-123",
		"-n", "sudo-payments")
	assert.NotEqual(t, 0, d.code)
	assert.Contains(t, d.stderr, "forbidden")
	assert.Equal(t, "revoked by sudo-bob", counts("sudo-alice")["inc-123"])

	// Neither changes once made.
	for _, kind := range []string{"sudogrant", "sudorequest"} {
		p := run(t, env, false, st.kubectl, "--kubeconfig="+admin, "patch", kind, "inc-123", "-n", "sudo-payments",
			"--type=merge", "-p", `{"spec":{"durationSeconds":3600}}`)
		assert.NotEqual(t, 0, p.code, kind)
		assert.Contains(t, p.stderr, "cannot change once made", kind)
	}

	// who-can answers who may approve, from RBAC as the cluster reads it.
	w := run(t, env, false, st.ki, "who-can", "approve", "sudorequests", "-n", "sudo-payments", "--kubeconfig="+admin)
	require.Equal(t, 0, w.code, w.stderr)
	assert.Contains(t, w.stdout, "sudo-alice")
	assert.Contains(t, w.stdout, "sudo-bob")
	assert.NotContains(t, w.stdout, "sudo-carol")
}

// sudoCluster is the cluster with deploy/sudo installed, as its admin.
func sudoCluster(t *testing.T) (string, []string) {
	t.Helper()
	admin, err := st.adminKubeconfig(st.api["legacy"])
	require.NoError(t, err)
	env := baseEnv(t.TempDir())
	installSudo(t, admin, env)
	return admin, env
}

// installSudo applies deploy/sudo as its docs say: the kinds and roles,
// then, once the kinds are served, the admission policies.
func installSudo(t *testing.T, admin string, env []string) {
	t.Helper()
	r := run(t, env, false, st.kubectl, "--kubeconfig="+admin, "apply", "--server-side", "-f", "../../deploy/sudo/crds.yaml",
		"-f", "../../deploy/sudo/rbac.yaml")
	require.Equal(t, 0, r.code, r.stderr)
	r = run(t, env, false, st.kubectl, "--kubeconfig="+admin, "wait", "--for=condition=established", "--timeout=60s",
		"crd/sudopolicies.sudo.kubectl-impersonate.io", "crd/sudorequests.sudo.kubectl-impersonate.io",
		"crd/sudogrants.sudo.kubectl-impersonate.io")
	require.Equal(t, 0, r.code, r.stderr)
	r = run(t, env, false, st.kubectl, "--kubeconfig="+admin, "apply", "--server-side", "-f", "../../deploy/sudo/admission.yaml")
	require.Equal(t, 0, r.code, r.stderr)
}

// TestSudoCommands: the commands over that state, as two people would run
// them (kube-apiserver's impersonation stands for their logins): dave
// requests; a role the policy does not allow is refused with the cluster's
// message; erin sees it pending and approves; dave's own approval is
// refused; dave's status shows the grant active, ending 30 minutes after
// its server-set start; a second approval is refused; erin revokes it and
// dave's status says so. erin denies a request, which then cannot be
// approved or denied again; dave withdraws another (deny, his own).
func TestSudoCommands(t *testing.T) {
	admin, env := sudoCluster(t)
	kubectlApply(t, admin, `apiVersion: v1
kind: Namespace
metadata: {name: sudo-cmds}
---
apiVersion: sudo.kubectl-impersonate.io/v1alpha1
kind: SudoPolicy
metadata: {name: default, namespace: sudo-cmds}
spec: {roles: [edit, view], maxDurationSeconds: 3600}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: sudo-requesters, namespace: sudo-cmds}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: sudo-requester.kubectl-impersonate.io}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: sudo-dave}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: sudo-approvers, namespace: sudo-cmds}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: sudo-approver.kubectl-impersonate.io}
subjects:
  - {apiGroup: rbac.authorization.k8s.io, kind: User, name: sudo-dave}
  - {apiGroup: rbac.authorization.k8s.io, kind: User, name: sudo-erin}
`)
	sudo := func(user string, args ...string) result {
		return run(t, env, false, append([]string{st.ki, "sudo"}, append(args, "-n", "sudo-cmds",
			"--kubeconfig="+admin, "--as="+user)...)...)
	}
	// The policy of a new namespace takes effect within seconds: the
	// refusal is waited for, bounded.
	var refused result
	for deadline := time.Now().Add(30 * time.Second); ; {
		refused = sudo("sudo-dave", "request", "--role", "admin", "--for", "10m", "--reason", "try")
		if refused.code != 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	assert.NotEqual(t, 0, refused.code)
	assert.Contains(t, refused.stderr, "the role admin may not be requested in sudo-cmds (its SudoPolicy allows edit, view)")

	r := sudo("sudo-dave", "request", "--role", "edit", "--for", "30m", "--reason", "INC-9 checkout down",
		"--ticket", "INC-9")
	require.Equal(t, 0, r.code, r.stderr)
	m := regexp.MustCompile(`^sudorequest/(sudo-[a-z0-9]+) created in sudo-cmds: edit for 30m0s\n$`).FindStringSubmatch(r.stdout)
	require.NotNil(t, m, r.stdout)
	name := m[1]
	assert.Contains(t, r.stderr, "kubectl impersonate sudo approve "+name+" -n sudo-cmds")

	l := sudo("sudo-erin", "list", "-o", "json")
	require.Equal(t, 0, l.code, l.stderr)
	var pending []map[string]any
	require.NoError(t, json.Unmarshal([]byte(l.stdout), &pending))
	require.Len(t, pending, 1, l.stdout)
	assert.Equal(t, []any{name, "sudo-dave", "edit", float64(1800), "INC-9 checkout down", "INC-9"},
		[]any{pending[0]["name"], pending[0]["requester"], pending[0]["role"], pending[0]["durationSeconds"],
			pending[0]["reason"], pending[0]["ticket"]})

	own := sudo("sudo-dave", "approve", name)
	assert.NotEqual(t, 0, own.code)
	assert.Contains(t, own.stderr, "you cannot approve your own request")

	a := sudo("sudo-erin", "approve", name)
	require.Equal(t, 0, a.code, a.stderr)
	assert.Contains(t, a.stdout, "sudogrant/"+name+" created in sudo-cmds: sudo-dave holds edit until ")
	approved := time.Now()

	s := sudo("sudo-dave", "status", "-o", "json")
	require.Equal(t, 0, s.code, s.stderr)
	var grants []struct {
		Name, Role, Approver, Why string
		Ends                      time.Time
		Active                    bool
	}
	require.NoError(t, json.Unmarshal([]byte(s.stdout), &grants))
	require.Len(t, grants, 1, s.stdout)
	assert.Equal(t, []any{name, "edit", "sudo-erin", true}, []any{grants[0].Name, grants[0].Role, grants[0].Approver,
		grants[0].Active})
	assert.WithinDuration(t, approved.Add(30*time.Minute), grants[0].Ends, 5*time.Second, "30 minutes from its start")
	human := sudo("sudo-dave", "status")
	require.Equal(t, 0, human.code, human.stderr)
	assert.Contains(t, human.stdout, "INC-9 checkout down")
	none := sudo("sudo-erin", "list")
	require.Equal(t, 0, none.code, none.stderr)
	assert.Contains(t, none.stderr, "No requests awaiting approval.")

	again := sudo("sudo-erin", "approve", name)
	assert.NotEqual(t, 0, again.code, "one grant a request")
	rv := sudo("sudo-erin", "revoke", name)
	require.Equal(t, 0, rv.code, rv.stderr)
	s = sudo("sudo-dave", "status", "-o", "json")
	require.Equal(t, 0, s.code, s.stderr)
	grants = nil
	require.NoError(t, json.Unmarshal([]byte(s.stdout), &grants))
	require.Len(t, grants, 1, s.stdout)
	assert.Equal(t, []any{false, "revoked by sudo-erin"}, []any{grants[0].Active, grants[0].Why})

	// deny: an approver's denial is final; the requester may withdraw
	// their own request the same way.
	ask := func() string {
		r := sudo("sudo-dave", "request", "--role", "view", "--for", "10m", "--reason", "look")
		require.Equal(t, 0, r.code, r.stderr)
		m := regexp.MustCompile(`^sudorequest/(sudo-[a-z0-9]+) created`).FindStringSubmatch(r.stdout)
		require.NotNil(t, m, r.stdout)
		return m[1]
	}
	denied := ask()
	d := sudo("sudo-erin", "deny", denied)
	require.Equal(t, 0, d.code, d.stderr)
	assert.Equal(t, "sudorequest/"+denied+" denied in sudo-cmds\n", d.stdout)
	late := sudo("sudo-erin", "approve", denied)
	assert.NotEqual(t, 0, late.code)
	assert.Contains(t, late.stderr, denied+" in sudo-cmds was denied by sudo-erin")
	again = sudo("sudo-erin", "deny", denied)
	assert.NotEqual(t, 0, again.code)
	assert.Contains(t, again.stderr, denied+" was already denied by sudo-erin", "the cluster's message")
	withdrawn := ask()
	w := sudo("sudo-dave", "deny", withdrawn)
	require.Equal(t, 0, w.code, w.stderr)
	none = sudo("sudo-erin", "list")
	require.Equal(t, 0, none.code, none.stderr)
	assert.Contains(t, none.stderr, "No requests awaiting approval.", "denied and withdrawn requests are not pending")
}
