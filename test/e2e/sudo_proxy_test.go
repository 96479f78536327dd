//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/term"
)

// sudoGrantExtra is the extra a request asks the proxy for a grant with.
const sudoGrantExtra = "kubectl-impersonate.io/sudo-grant"

// TestSudoThroughTheProxy (issue 58, proxy mode): alice and bob log in to
// Dex through two replicas of the proxy (--sudo); kube-apiserver decides
// everything but the grant, and its audit log is the witness.
//   - alice's elevated delete is 403 before approval; her own approval is
//     refused by the admission policy; bob approves, and the same delete
//     is allowed within 2 s on both replicas; her plain delete and the
//     elevated one in another namespace stay 403.
//   - A third replica whose informer cannot sync (its identity may not
//     list grants) refuses the elevated get with 503 and serves alice's
//     unelevated requests.
//   - The audit event of the elevated request names alice, the elevation
//     group, the reason, the ticket and the grant.
//   - sudo -- COMMAND runs kubectl under the grant; a TokenRequest under it
//     asking for a day ends with the grant.
//   - Revocation: refused on both replicas within 2 s; a watch and a
//     kubectl exec -it opened before are closed within 2 s.
//   - Expiry: a one-minute grant's watch and kubectl exec -it (on a
//     pseudo-terminal, kube-apiserver calling the stand-in kubelet of
//     kubelet_test.go) are closed by its end + 1 s, and a new request after
//     the end is 403 "grant G expired at T" on both replicas.
func TestSudoThroughTheProxy(t *testing.T) {
	admin, env := sudoCluster(t)
	api := st.api["legacy"]
	const ns, elsewhere = "sudo-pay", "sudo-elsewhere"
	const aliceName, bobName = "proxy:alice@example.com", "proxy:bob@example.com"
	// The policy's role edit is bound to its group as a ClusterRole of the
	// test's (the stack runs no controller manager, which fills the
	// aggregated edit).
	kubectlApply(t, admin, fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: v1
kind: Namespace
metadata: {name: %[2]s}
---
apiVersion: sudo.kubectl-impersonate.io/v1alpha1
kind: SudoPolicy
metadata: {name: default, namespace: %[1]s}
spec: {roles: [edit], maxDurationSeconds: 3600}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: sudo-requesters, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: sudo-requester.kubectl-impersonate.io}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: %[3]q}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: sudo-approvers, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: sudo-approver.kubectl-impersonate.io}
subjects:
  - {apiGroup: rbac.authorization.k8s.io, kind: User, name: %[3]q}
  - {apiGroup: rbac.authorization.k8s.io, kind: User, name: %[4]q}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: e2e-sudo-edit}
rules:
  - {apiGroups: [""], resources: [configmaps, secrets], verbs: [get, list, watch, create, update, patch, delete]}
  - {apiGroups: [""], resources: [serviceaccounts/token], verbs: [create]}
  - {apiGroups: [batch], resources: [cronjobs], verbs: [get, list, create]}
  - {apiGroups: [""], resources: [pods], verbs: [get]}
  - {apiGroups: [""], resources: [pods/exec], verbs: [get, create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: sudo-edit, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: e2e-sudo-edit}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "sudo:%[1]s:edit"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: sudo-edit, namespace: %[2]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: e2e-sudo-edit}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "sudo:%[1]s:edit"}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: ci, namespace: %[1]s}
---
apiVersion: v1
kind: Secret
metadata: {name: legacy, namespace: %[1]s, annotations: {kubernetes.io/service-account.name: ci}}
type: kubernetes.io/service-account-token
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web, namespace: %[1]s}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web, namespace: %[2]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: e2e-proxy-sudo}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kubectl-impersonate-proxy-sudo}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: e2e-proxy}]
`, ns, elsewhere, aliceName, bobName))
	r := run(t, env, false, st.kubectl, "--kubeconfig="+admin, "apply", "--server-side", "-f",
		"../../deploy/proxy/rbac-sudo.yaml")
	require.Equal(t, 0, r.code, r.stderr)
	shellPod(t, admin, env, "sudo-node", ns)

	oidc := []string{"--oidc-issuer-url=" + st.issuer, "--oidc-certificate-authority=" + st.caFile,
		"--oidc-client-id=" + publicClient, "--oidc-username-claim=email", "--oidc-username-prefix=proxy:",
		"--oidc-groups-claim=groups", "--sudo"}
	replica := [2]string{}
	replica[0], _ = startProxyAt(t, "sudo-1", api.url, proxyToken, "/readyz", oidc...)
	replica[1], _ = startProxyAt(t, "sudo-2", api.url, proxyToken, "/readyz", oidc...)
	alice := newPerson(t, "alice", &apiserver{mode: "proxy", url: replica[0]})
	// The keyring is shared by the tests: bob's tokens are kept apart from
	// alice's by one more scope (the cache's key holds the scopes).
	bob := newPerson(t, "bob", &apiserver{mode: "proxy", url: replica[1]}, "--oidc-extra-scope=profile")
	// Each logs in once (the browser, through kubectl in a terminal).
	require.Equal(t, aliceName, alice.whoami().Status.UserInfo.Username)
	require.Equal(t, bobName, bob.whoami().Status.UserInfo.Username)
	sudo := func(p *person, args ...string) result {
		if args[0] == "--" { // the namespace before the command
			return p.plugin(nil, append([]string{"sudo", "-n", ns}, args...)...)
		}
		return p.plugin(nil, append([]string{"sudo"}, append(args, "-n", ns)...)...)
	}
	// elevated is alice's request under grant through replica i, as
	// kubectl --as and --as-user-extra send it.
	elevated := func(i int, grant string, args ...string) result {
		return alice.kubectl(append([]string{"--server=" + replica[i], "--as=" + aliceName,
			"--as-user-extra=" + sudoGrantExtra + "=" + ns + "/" + grant}, args...)...)
	}
	deleteWeb := func(i int, grant, namespace string) result {
		return elevated(i, grant, "delete", "configmap", "web", "-n", namespace, "--dry-run=server")
	}
	request := func(d, reason string) string {
		r := sudo(alice, "request", "--role", "edit", "--for", d, "--reason", reason, "--ticket", "INC-7")
		require.Equal(t, 0, r.code, r.stderr)
		m := regexp.MustCompile(`^sudorequest/(sudo-[a-z0-9]+) created`).FindStringSubmatch(r.stdout)
		require.NotNil(t, m, r.stdout)
		return m[1]
	}

	// The policy of a new namespace takes effect within seconds.
	var name string
	for deadline := time.Now().Add(30 * time.Second); name == ""; {
		r := sudo(alice, "request", "--role", "edit", "--for", "30m", "--reason", "INC-7 checkout down",
			"--ticket", "INC-7")
		if m := regexp.MustCompile(`^sudorequest/(sudo-[a-z0-9]+) created`).FindStringSubmatch(r.stdout); m != nil {
			name = m[1]
		}
		require.True(t, name != "" || time.Now().Before(deadline), r.stderr)
		time.Sleep(500 * time.Millisecond)
	}

	before := deleteWeb(0, name, ns)
	assert.NotEqual(t, 0, before.code)
	assert.Contains(t, before.stderr, "there is no sudo grant "+name+" in "+ns, "403 before approval")
	own := sudo(alice, "approve", name)
	assert.NotEqual(t, 0, own.code)
	assert.Contains(t, own.stderr, "you cannot approve your own request", "the admission policy's message")

	a := sudo(bob, "approve", name)
	require.Equal(t, 0, a.code, a.stderr)
	approved := time.Now()
	var allowed result
	for i := range 2 {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if allowed = deleteWeb(i, name, ns); allowed.code == 0 || time.Now().After(deadline) {
				break
			}
		}
		require.Equal(t, 0, allowed.code, "replica %d: %s", i+1, allowed.stderr)
		if i == 0 {
			t.Logf("the elevated delete was allowed %s after the approval", time.Since(approved).Round(time.Millisecond))
			assert.Less(t, time.Since(approved), 2*time.Second, "allowed within 2 s of the approval")
		}
	}
	blindReplica(t, admin, env, api.url, oidc, alice, name, ns)
	plain := alice.kubectl("delete", "configmap", "web", "-n", ns, "--dry-run=server")
	assert.NotEqual(t, 0, plain.code)
	assert.Contains(t, plain.stderr, `cannot delete resource "configmaps"`, "without the grant: RBAC's answer")
	other := deleteWeb(1, name, elsewhere)
	assert.NotEqual(t, 0, other.code)
	assert.Contains(t, other.stderr, "sudo grant "+ns+"/"+name+" is for namespace "+ns+", not "+elsewhere)

	// kube-apiserver's audit log: the real person, the group, why, under
	// which grant.
	var seen *auditEvent
	for deadline := time.Now().Add(10 * time.Second); seen == nil && time.Now().Before(deadline); {
		for _, e := range readAudit(t, api.auditLog) {
			if e.Stage == "ResponseComplete" && e.Verb == "delete" && e.ImpersonatedUser != nil &&
				strings.Contains(e.RequestURI, "/namespaces/"+ns+"/configmaps/web") &&
				slices.Contains(e.ImpersonatedUser.Groups, "sudo:"+ns+":edit") {
				seen = &e
				break
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.NotNil(t, seen, "the elevated delete in kube-apiserver's audit log")
	assert.Equal(t, aliceName, seen.ImpersonatedUser.Username)
	assert.Equal(t, "e2e-proxy", seen.User.Username)
	assert.Equal(t, []string{ns + "/" + name}, seen.ImpersonatedUser.Extra[sudoGrantExtra])
	assert.Equal(t, []string{"INC-7 checkout down"}, seen.ImpersonatedUser.Extra["kubectl-impersonate.io/sudo-reason"])
	assert.Equal(t, []string{"INC-7"}, seen.ImpersonatedUser.Extra["kubectl-impersonate.io/sudo-ticket"])

	// sudo -- COMMAND: kubectl under the grant; a day's token ends with it.
	var grants []struct {
		Name string
		Ends time.Time
	}
	s := sudo(alice, "status", "-o", "json")
	require.Equal(t, 0, s.code, s.stderr)
	require.NoError(t, json.Unmarshal([]byte(s.stdout), &grants))
	require.Len(t, grants, 1, s.stdout)
	ends := grants[0].Ends
	// why: under the grant, allowed until its end, by whom; without it, no,
	// and the grant alice holds.
	under := sudo(alice, "--", st.ki, "why", "delete", "configmaps")
	assert.Equal(t, 0, under.code, under.stderr)
	assert.Contains(t, under.stdout, "Allowed until "+ends.UTC().Format(time.RFC3339)+" by sudo grant "+ns+"/"+name+
		" (role edit) approved by "+bobName+".")
	// access under the grant: the matrix, and until when.
	acc := sudo(alice, "--", st.ki, "access", "--resource=configmaps", "--verb=delete")
	assert.Equal(t, 0, acc.code, acc.stderr)
	assert.Contains(t, acc.stdout, "# Allowed until "+ends.UTC().Format(time.RFC3339)+" by sudo grant "+ns+"/"+name+
		" (role edit) approved by "+bobName+".")
	assert.Regexp(t, `(?m)^configmaps\s+✔`, acc.stdout, "delete configmaps allowed under the grant")
	without := alice.plugin(nil, "why", "delete", "configmaps", "-n", ns)
	assert.Equal(t, 1, without.code, without.stderr)
	assert.Contains(t, without.stdout, "You hold sudo grant "+ns+"/"+name+" (role edit, approved by "+bobName+")")
	tok := sudo(alice, "--", st.kubectl, "create", "token", "ci", "--duration=24h")
	require.Equal(t, 0, tok.code, tok.stderr)
	assert.Contains(t, tok.stderr, "runs under grant "+ns+"/"+name)
	parts := strings.Split(strings.TrimSpace(tok.stdout), ".")
	require.Len(t, parts, 3, "a JWT")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	var claims struct {
		Exp int64 `json:"exp"`
	}
	require.NoError(t, json.Unmarshal(payload, &claims))
	t.Logf("grant ends %s; the token asked for 24h ends %s", ends.Format(time.RFC3339),
		time.Unix(claims.Exp, 0).UTC().Format(time.RFC3339))
	assert.LessOrEqual(t, claims.Exp, ends.Unix()+1, "the token ends by the grant's end")
	assert.Greater(t, claims.Exp, time.Now().Add(20*time.Minute).Unix(), "clamped, not refused")

	// sudo report: every request under the grant, from kube-apiserver's
	// audit log, and what it left that may outlive it.
	for _, argv := range [][]string{{"create", "secret", "generic", "keep", "--from-literal=k=v"},
		{"create", "cronjob", "nightly", "--image=registry.k8s.io/pause:3.10", "--schedule=@daily"}} {
		c := sudo(alice, append([]string{"--", st.kubectl}, argv...)...)
		require.Equal(t, 0, c.code, c.stderr)
	}
	// A service-account-token Secret would outlive the grant: refused by
	// the cluster's admission (sudo-persistence).
	forever := sudo(alice, "--", st.kubectl, "create", "-f", writeTemp(t, `apiVersion: v1
kind: Secret
metadata: {name: forever, annotations: {kubernetes.io/service-account.name: ci}}
type: kubernetes.io/service-account-token
`))
	assert.NotEqual(t, 0, forever.code)
	assert.Contains(t, forever.stderr, "Secret written under a sudo grant would outlive it")
	// Nor may one that exists be changed (an attacker's review: pointed at
	// another service account, the token controller fills it anew).
	changed := sudo(alice, "--", st.kubectl, "annotate", "secret", "legacy", "--overwrite",
		"kubernetes.io/service-account.name=builder")
	assert.NotEqual(t, 0, changed.code)
	assert.Contains(t, changed.stderr, "Secret written under a sudo grant would outlive it")
	var rep struct {
		Requests   []map[string]any
		MayOutlive []struct {
			Request struct{ Resource, Subresource, Name, Created string }
			Risk    struct{ Kind string }
		}
	}
	var outlive []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		rp := sudo(alice, "report", name, "--from-audit", api.auditLog, "-o", "json")
		require.Equal(t, 0, rp.code, rp.stderr)
		require.NoError(t, json.Unmarshal([]byte(rp.stdout), &rep))
		outlive = nil
		for _, m := range rep.MayOutlive {
			outlive = append(outlive, strings.TrimSuffix(m.Request.Resource+"/"+m.Request.Subresource, "/")+" "+
				m.Request.Name+m.Request.Created+" "+m.Risk.Kind)
		}
		if len(outlive) >= 3 || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("sudo report: %d requests under %s; may outlive it: %v", len(rep.Requests), name, outlive)
	assert.Contains(t, outlive, "secrets keep credentials")
	assert.Contains(t, outlive, "cronjobs nightly workload")
	assert.Contains(t, outlive, "serviceaccounts/token ci credentials")

	// A one-minute grant, for expiry, while the first one is revoked.
	short := request("1m", "INC-8 expiry")
	require.Equal(t, 0, sudo(bob, "approve", short).code)
	watchUnder := func(i int, grant string) <-chan time.Time {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		t.Cleanup(cancel)
		cmd := exec.CommandContext(ctx, st.kubectl, "--kubeconfig="+alice.kubeconfig, "--server="+replica[i],
			"--as="+aliceName, "--as-user-extra="+sudoGrantExtra+"="+ns+"/"+grant,
			"get", "configmaps", "-n", ns, "-w", "-o", "name")
		cmd.Env = alice.env
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		sc := bufio.NewScanner(out)
		require.True(t, sc.Scan(), "the watch lists first")
		closed := make(chan time.Time, 1)
		go func() {
			for sc.Scan() {
			}
			_ = cmd.Wait()
			closed <- time.Now()
		}()
		return closed
	}
	shortWatch, shortExec := watchUnder(1, short), execUnder(t, alice, replica[0], short, ns)
	revokedWatch, revokedExec := watchUnder(0, name), execUnder(t, alice, replica[1], name, ns)
	revoking := time.Now() // a stream cut before this ended for another reason
	rv := sudo(bob, "revoke", name)
	require.Equal(t, 0, rv.code, rv.stderr)
	revoked := time.Now()
	for i := range 2 {
		var after result
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if after = deleteWeb(i, name, ns); after.code != 0 || time.Now().After(deadline) {
				break
			}
		}
		assert.Contains(t, after.stderr, "grant "+ns+"/"+name+" revoked by "+bobName, "replica %d", i+1)
		assert.Less(t, time.Since(revoked), 2*time.Second, "refused within 2 s of the revocation (replica %d)", i+1)
	}
	endedBy(t, revokedWatch, "the watch under the revoked grant", revoking, "bob ran revoke", 2*time.Second, 0)
	endedBy(t, revokedExec, "kubectl exec -it under the revoked grant", revoking, "bob ran revoke", 2*time.Second, 0)

	s = sudo(alice, "status", "-o", "json")
	require.Equal(t, 0, s.code, s.stderr)
	grants = nil
	require.NoError(t, json.Unmarshal([]byte(s.stdout), &grants))
	var shortEnds time.Time
	for _, g := range grants {
		if g.Name == short {
			shortEnds = g.Ends
		}
	}
	require.False(t, shortEnds.IsZero(), s.stdout)
	// By its end + 1 s (500 ms more for the two processes' clocks to read).
	endedBy(t, shortWatch, "the watch under the one-minute grant", shortEnds, "its end", 1500*time.Millisecond, time.Second)
	endedBy(t, shortExec, "kubectl exec -it under the one-minute grant", shortEnds, "its end", 1500*time.Millisecond,
		time.Second)
	time.Sleep(time.Until(shortEnds))
	for i := range 2 {
		late := deleteWeb(i, short, ns)
		assert.NotEqual(t, 0, late.code)
		assert.Contains(t, late.stderr, "grant "+ns+"/"+short+" expired at "+shortEnds.UTC().Format(time.RFC3339),
			"replica %d", i+1)
	}
}

// writeTemp writes content to a file of the test's and returns its path.
func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "manifest.yaml")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// execUnder runs kubectl exec -it shell -- cat under grant through the proxy
// at server, on a pseudo-terminal as a person would, and returns once a line
// typed there came back; the channel gets the time kubectl exited.
func execUnder(t *testing.T, p *person, server, grant, ns string) <-chan time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, st.kubectl, "--kubeconfig="+p.kubeconfig, "--server="+server,
		"--as=proxy:"+p.name+"@example.com", "--as-user-extra="+sudoGrantExtra+"="+ns+"/"+grant,
		"exec", "-it", "-n", ns, "shell", "--", "cat")
	cmd.Env = p.env
	// The terminal echoes nothing itself (raw from the start, as kubectl
	// makes it), so a line read back came from the container.
	tty, slave, err := pty.Open()
	require.NoError(t, err)
	t.Cleanup(func() { _ = tty.Close() })
	_, err = term.MakeRaw(int(slave.Fd()))
	require.NoError(t, err)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	require.NoError(t, cmd.Start())
	require.NoError(t, slave.Close())
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(tty)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	_, err = tty.Write([]byte("alive under " + grant + "\n"))
	require.NoError(t, err)
	var screen []string
	for answered := false; !answered; {
		select {
		case line, ok := <-lines:
			require.True(t, ok, "kubectl exec -it ended before it answered: %q", screen)
			screen = append(screen, line)
			answered = strings.Contains(line, "alive under "+grant)
		case <-time.After(30 * time.Second):
			require.Fail(t, "kubectl exec -it did not answer", "%q", screen)
		}
	}
	closed := make(chan time.Time, 1)
	go func() {
		for range lines { // the terminal drained until kubectl exits
		}
		_ = cmd.Wait()
		closed <- time.Now()
	}()
	return closed
}

// blindReplica starts a replica of the proxy (--sudo) as a service account
// that may impersonate but not list sudo grants, as a proxy deployed
// without deploy/proxy/rbac-sudo.yaml is: its informer never syncs. Under
// alice's live grant, her elevated get through it is 503 with
// Retry-After (kubectl retries, then says why) while her unelevated
// requests are served.
func blindReplica(t *testing.T, admin string, env []string, upstream string, oidc []string, alice *person, grant, ns string) {
	t.Helper()
	kubectlApply(t, admin, fmt.Sprintf(`apiVersion: v1
kind: ServiceAccount
metadata: {name: blind-proxy, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: e2e-blind-proxy-impersonates}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: impersonator}
subjects: [{kind: ServiceAccount, name: blind-proxy, namespace: %[1]s}]
`, ns))
	tok := run(t, env, false, st.kubectl, "--kubeconfig="+admin, "create", "token", "blind-proxy", "-n", ns, "--duration=1h")
	require.Equal(t, 0, tok.code, tok.stderr)
	blind, _ := startProxyAt(t, "sudo-blind", upstream, strings.TrimSpace(tok.stdout), "/readyz", oidc...)
	who := alice.kubectl("--server="+blind, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	require.Equal(t, 0, who.code, "unelevated requests are served: %s", who.stderr)
	assert.Equal(t, "proxy:alice@example.com", who.stdout)
	// get --raw: kubectl's discovery under the grant would be refused
	// alike, and say so in its own words.
	start := time.Now()
	r := alice.kubectl("--server="+blind, "--as=proxy:alice@example.com",
		"--as-user-extra="+sudoGrantExtra+"="+ns+"/"+grant, "get", "--raw", "/api/v1/namespaces/"+ns+"/configmaps/web")
	t.Logf("the replica that cannot sync: kubectl gave up on the elevated get after %s (retrying on 503): %s",
		time.Since(start).Round(time.Millisecond), strings.TrimSpace(r.stderr))
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "(ServiceUnavailable)")
	assert.Contains(t, r.stderr, "the impersonating proxy cannot tell whether sudo grant "+ns+"/"+grant+" counts now")
	plain := alice.kubectl("--server="+blind, "get", "configmap", "web", "-n", ns)
	assert.NotEqual(t, 0, plain.code)
	assert.Contains(t, plain.stderr, `cannot get resource "configmaps"`, "unelevated: RBAC's own answer, not 503")
}

// endedBy waits for what's end on ended and asserts it came within bound
// after at (the event), and not more than slack before it (an end's time
// is the server's, to the second).
func endedBy(
	t *testing.T, ended <-chan time.Time, what string, at time.Time, event string, bound, slack time.Duration,
) {
	t.Helper()
	select {
	case end := <-ended:
		t.Logf("%s ended %s after %s", what, end.Sub(at).Round(time.Millisecond), event)
		assert.Less(t, end.Sub(at), bound, "%s ended within %s of %s", what, bound, event)
		assert.GreaterOrEqual(t, end.Sub(at), -slack, "%s: not before %s", what, event)
	case <-time.After(time.Until(at) + 10*time.Second):
		t.Errorf("%s outlived %s", what, event)
	}
}
