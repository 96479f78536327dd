//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSudoDirect (issue 58, direct mode: Kubernetes 1.36+, constrained
// impersonation on by default): no proxy. alice and bob log in to Dex
// against kube-apiserver itself; kubectl-impersonate sudo-controller
// materialises bob's approval of alice's request as RBAC, and kubectl
// --as alice --as-group sudo:NS:ROLE is allowed until the grant is
// revoked. The audit event names alice, the group, reason, ticket, grant
// and the impersonation constraint. Stopped, the controller leaves a
// revoked grant's RBAC in place (fail-open): the lag is measured until a
// restarted replica removes it.
func TestSudoDirect(t *testing.T) {
	d := newDirectSudo(t, st.api["legacy"], "sudo-direct")
	alice, bob, ns, api := d.alice, d.bob, d.ns, d.api
	aliceName, sudo, request, as, deleteWeb, until := d.aliceName, d.sudo, d.request, d.as, d.deleteWeb, d.until
	stopController := d.controller()

	name := request()
	plain := alice.kubectl("delete", "configmap", "web", "-n", ns, "--dry-run=server")
	assert.NotEqual(t, 0, plain.code, "no standing right")
	require.Equal(t, 0, sudo(bob, "approve", name).code)
	r, lag := until(name, true)
	require.Equal(t, 0, r.code, r.stderr)
	t.Logf("direct mode: the elevated delete was allowed %s after the approval", lag.Round(time.Millisecond))
	assert.Less(t, lag, 5*time.Second)
	viaSudo := sudo(alice, "--", st.kubectl, "delete", "configmap", "web", "--dry-run=server")
	require.Equal(t, 0, viaSudo.code, viaSudo.stderr)
	assert.Contains(t, viaSudo.stdout, `configmap "web" deleted from `+ns+` namespace (server dry run)`,
		"sudo --direct -- kubectl writes the same")

	// kube-apiserver's audit event: alice, the group, why, the grant, and
	// the constraint that allowed it.
	var seen *auditEvent
	for deadline := time.Now().Add(10 * time.Second); seen == nil && time.Now().Before(deadline); {
		for _, e := range readAudit(t, api.auditLog) {
			if e.Stage == "ResponseComplete" && e.Verb == "delete" && e.ImpersonatedUser != nil &&
				strings.Contains(e.RequestURI, "/namespaces/"+ns+"/configmaps/web") &&
				slices.Contains(e.ImpersonatedUser.Groups, "sudo:"+ns+":e2e-direct-edit") {
				seen = &e
				break
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.NotNil(t, seen, "the elevated delete in kube-apiserver's audit log")
	assert.Equal(t, aliceName, seen.User.Username, "alice herself sent it")
	assert.Equal(t, aliceName, seen.ImpersonatedUser.Username)
	assert.Equal(t, []string{ns + "/" + name}, seen.ImpersonatedUser.Extra[sudoGrantExtra])
	assert.Equal(t, []string{"INC-9 direct"}, seen.ImpersonatedUser.Extra["kubectl-impersonate.io/sudo-reason"])
	assert.Equal(t, []string{"INC-9"}, seen.ImpersonatedUser.Extra["kubectl-impersonate.io/sudo-ticket"])
	require.NotNil(t, seen.AuthenticationMetadata)
	assert.Equal(t, "impersonate:user-info", seen.AuthenticationMetadata.ImpersonationConstraint)

	// A service-account token lives at most 10 minutes without the proxy
	// (admission's sudo-persistence), with the grant's extras or the group
	// alone; nor can alice set another reason than the grant's.
	long := as(name, "create", "token", "ci", "-n", ns, "--duration=24h")
	assert.NotEqual(t, 0, long.code)
	assert.Contains(t, long.stderr, "lives at most 10 minutes")
	bare := alice.kubectl("--as="+aliceName, "--as-group=sudo:"+ns+":e2e-direct-edit", "create", "token", "ci",
		"-n", ns, "--duration=24h")
	assert.NotEqual(t, 0, bare.code)
	assert.Contains(t, bare.stderr, "lives at most 10 minutes", "the group alone is enough for admission")
	short := as(name, "create", "token", "ci", "-n", ns, "--duration=10m")
	assert.Equal(t, 0, short.code, short.stderr)
	forged := alice.kubectl("--as="+aliceName, "--as-group=sudo:"+ns+":e2e-direct-edit",
		"--as-user-extra=kubectl-impersonate.io/sudo-reason=approved by the CEO", "get", "configmap", "web", "-n", ns)
	assert.NotEqual(t, 0, forged.code, "only the grant's reason")
	assert.Contains(t, forged.stderr, "cannot impersonate")

	// Revoked: its RBAC removed by the controller.
	require.Equal(t, 0, sudo(bob, "revoke", name).code)
	r, lag = until(name, false)
	assert.NotEqual(t, 0, r.code, "refused after the revocation")
	assert.Contains(t, r.stderr, "cannot impersonate", "refused by the impersonation filter: the RBAC is gone")
	t.Logf("direct mode: refused %s after the revocation (the controller's removal)", lag.Round(time.Millisecond))
	// The controller's second, then kube-apiserver's cache of allowed
	// constrained impersonations (10 s: its impersonation filter's
	// cache.go) may still allow it.
	assert.Less(t, lag, 13*time.Second)

	// The controller stopped: a revoked grant keeps its RBAC (fail-open)
	// until a replica runs again.
	second := request()
	require.Equal(t, 0, sudo(bob, "approve", second).code)
	r, _ = until(second, true)
	require.Equal(t, 0, r.code, r.stderr)
	stopController()
	require.Equal(t, 0, sudo(bob, "revoke", second).code)
	revoked := time.Now()
	time.Sleep(3 * time.Second)
	still := deleteWeb(second)
	assert.Equal(t, 0, still.code, "fail-open while no controller runs: %s", still.stderr)
	d.controller()
	r, lag = until(second, false)
	assert.NotEqual(t, 0, r.code, "refused once a controller runs again")
	assert.Contains(t, r.stderr, "cannot impersonate", "refused by the impersonation filter: the RBAC is gone")
	t.Logf("direct mode with no controller for 3 s: refused %s after the revocation, %s after a replica started",
		time.Since(revoked).Round(time.Millisecond), lag.Round(time.Millisecond))
}

// directSudo is direct mode set up on one kube-apiserver: the kinds, a
// namespace whose policy allows e2e-direct-edit (configmaps get, list and
// delete; service-account tokens) with the group's standing RoleBinding,
// a ConfigMap web, alice (requester) and bob (approver) logged in to Dex.
type directSudo struct {
	t                  *testing.T
	api                *apiserver
	ns, admin          string
	env                []string
	alice, bob         *person
	aliceName, bobName string
	controllerArgs     []string
}

func newDirectSudo(t *testing.T, api *apiserver, ns string, controllerArgs ...string) *directSudo {
	t.Helper()
	minor, err := strconv.Atoi(strings.TrimPrefix(os.Getenv("KI_E2E_K8S"), "1."))
	require.NoError(t, err, "KI_E2E_K8S")
	if minor < 36 {
		t.Skipf("direct mode needs constrained impersonation, on by default from 1.36 (this is 1.%d)", minor)
	}
	admin, err := st.adminKubeconfig(api)
	require.NoError(t, err)
	env := baseEnv(t.TempDir())
	installSudo(t, admin, env)
	d := &directSudo{t: t, api: api, ns: ns, admin: admin, env: env, controllerArgs: controllerArgs,
		alice: newPerson(t, "alice", api), bob: newPerson(t, "bob", api, "--oidc-extra-scope=profile")}
	d.aliceName = d.alice.whoami().Status.UserInfo.Username
	d.bobName = d.bob.whoami().Status.UserInfo.Username
	kubectlApply(t, admin, fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: sudo.kubectl-impersonate.io/v1alpha1
kind: SudoPolicy
metadata: {name: default, namespace: %[1]s}
spec: {roles: [e2e-direct-edit], maxDurationSeconds: 3600}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: sudo-requesters, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: sudo-requester.kubectl-impersonate.io}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: %[2]q}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: sudo-approvers, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: sudo-approver.kubectl-impersonate.io}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: %[3]q}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: e2e-direct-edit}
rules:
  - {apiGroups: [""], resources: [configmaps], verbs: [get, list, delete]}
  - {apiGroups: [""], resources: [serviceaccounts/token], verbs: [create]}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: ci, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: sudo-edit, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: e2e-direct-edit}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "sudo:%[1]s:e2e-direct-edit"}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web, namespace: %[1]s}
`, ns, d.aliceName, d.bobName))
	return d
}

// controller starts sudo-controller with the admin's credential
// (deploy/sudo/controller.yaml gives a service account the rights it uses)
// and d's arguments; the func stops it (SIGINT: it releases its Lease).
func (d *directSudo) controller() func() {
	t := d.t
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, st.ki, append([]string{"sudo-controller", "--kubeconfig=" + d.admin,
		"--lease-namespace=default"}, d.controllerArgs...)...)
	cmd.Env = d.env
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	log, err := os.OpenFile(filepath.Join(st.logs, t.Name()+"-controller.log"),
		os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); _ = cmd.Wait(); _ = log.Close() }) }
	t.Cleanup(stop)
	return stop
}

// sudo runs the plugin's sudo as p in d's namespace (sudo --direct for
// "-- COMMAND").
func (d *directSudo) sudo(p *person, args ...string) result {
	if args[0] == "--" {
		return p.plugin(nil, append([]string{"sudo", "-n", d.ns, "--direct"}, args...)...)
	}
	return p.plugin(nil, append([]string{"sudo"}, append(args, "-n", d.ns)...)...)
}

// request is alice's request for e2e-direct-edit for 10 minutes, retried
// (bounded) while the admission policies are not yet in force.
func (d *directSudo) request() string {
	var name string
	for deadline := time.Now().Add(30 * time.Second); name == ""; time.Sleep(300 * time.Millisecond) {
		r := d.sudo(d.alice, "request", "--role", "e2e-direct-edit", "--for", "10m", "--reason", "INC-9 direct",
			"--ticket", "INC-9")
		if m := regexp.MustCompile(`^sudorequest/(sudo-[a-z0-9]+) created`).FindStringSubmatch(r.stdout); m != nil {
			name = m[1]
		}
		require.True(d.t, name != "" || time.Now().Before(deadline), r.stderr)
	}
	return name
}

// as is alice's kubectl under grant, as sudo --direct's kubeconfig sends it
// (kubectl's own flags: after a revocation, sudo itself would refuse before
// asking the cluster).
func (d *directSudo) as(grant string, args ...string) result {
	return d.alice.kubectl(append([]string{"--as=" + d.aliceName, "--as-group=sudo:" + d.ns + ":e2e-direct-edit",
		"--as-user-extra=" + sudoGrantExtra + "=" + d.ns + "/" + grant,
		"--as-user-extra=kubectl-impersonate.io/sudo-reason=INC-9 direct",
		"--as-user-extra=kubectl-impersonate.io/sudo-ticket=INC-9"}, args...)...)
}

// deleteWeb is alice's elevated delete (a server dry run) under grant.
func (d *directSudo) deleteWeb(grant string) result {
	return d.as(grant, "delete", "configmap", "web", "-n", d.ns, "--dry-run=server")
}

// until polls deleteWeb until it succeeds (want) or is refused, bounded.
func (d *directSudo) until(grant string, want bool) (result, time.Duration) {
	start := time.Now()
	var r result
	for deadline := start.Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if r = d.deleteWeb(grant); (r.code == 0) == want || time.Now().After(deadline) {
			return r, time.Since(start)
		}
	}
}

// TestSudoDirectFailClosed (issue 58, direct mode's fail-closed variant):
// the stack's "webhook" kube-apiserver runs with deploy/sudo/
// authorization-config.yaml's webhook before RBAC (its --authorization-config),
// served by sudo-controller --authorization-webhook-listen, which answers
// kube-apiserver's client certificate only (--client-ca-file). A live grant's
// elevated delete is allowed (RBAC decides); the group without its grant is
// refused with the webhook's reason; a revocation is refused within 2 s,
// with the grant's reason, while kube-apiserver's 10 s cache of allowed
// impersonations still lets the impersonation through (plain direct mode
// waits that out: TestSudoDirect). With no controller replica running, a
// live grant's elevated request is refused (failurePolicy Deny: a 500 naming
// the webhook) and an unelevated one served; a replica back, the grant counts again.
func TestSudoDirectFailClosed(t *testing.T) {
	d := newDirectSudo(t, st.api["webhook"], "sudo-closed",
		"--authorization-webhook-listen="+st.sudoWebhookAddr, "--tls-cert-file="+st.certFile,
		"--tls-private-key-file="+st.keyFile, "--client-ca-file="+st.sudoClientCA)
	stop := d.controller()
	name := d.request()
	before := d.deleteWeb(name)
	assert.NotEqual(t, 0, before.code, "refused before the approval")
	require.Equal(t, 0, d.sudo(d.bob, "approve", name).code)
	r, lag := d.until(name, true)
	require.Equal(t, 0, r.code, r.stderr)
	t.Logf("fail-closed direct mode: the elevated delete was allowed %s after the approval", lag.Round(time.Millisecond))
	assertWebhookAnswersOnlyKubeAPIServer(t)

	bare := d.alice.kubectl("--as="+d.aliceName, "--as-group=sudo:"+d.ns+":e2e-direct-edit", "get", "configmap",
		"web", "-n", d.ns)
	assert.NotEqual(t, 0, bare.code, "the group without its grant")
	assert.Contains(t, bare.stderr, "comes with one grant, named in the extra "+sudoGrantExtra)

	// Allowed just now: kube-apiserver's impersonation cache holds that for
	// 10 s, so a refusal sooner is the webhook's.
	require.Equal(t, 0, d.deleteWeb(name).code)
	require.Equal(t, 0, d.sudo(d.bob, "revoke", name).code)
	r, lag = d.until(name, false)
	assert.NotEqual(t, 0, r.code, "refused after the revocation")
	assert.Contains(t, r.stderr, "grant "+d.ns+"/"+name+" revoked by "+d.bobName, "the webhook's reason")
	assert.Less(t, lag, 2*time.Second)
	t.Logf("fail-closed direct mode: refused %s after the revocation", lag.Round(time.Millisecond))

	second := d.request()
	require.Equal(t, 0, d.sudo(d.bob, "approve", second).code)
	r, _ = d.until(second, true)
	require.Equal(t, 0, r.code, r.stderr)
	stop()
	down := d.deleteWeb(second)
	assert.NotEqual(t, 0, down.code, "no replica answers: refused though the grant counts")
	// failurePolicy Deny with an error: kube-apiserver's authorization
	// filter answers 500 with the webhook's error.
	assert.Contains(t, down.stderr, "https://"+st.sudoWebhookAddr+"/?timeout=3s")
	assert.Contains(t, down.stderr, "connection refused")
	plain := d.alice.kubectl("auth", "whoami")
	assert.Equal(t, 0, plain.code, "unelevated requests are not asked about: %s", plain.stderr)
	d.controller()
	r, lag = d.until(second, true)
	assert.Equal(t, 0, r.code, "a replica back: the grant counts again: %s", r.stderr)
	t.Logf("fail-closed direct mode: allowed again %s after a replica started", lag.Round(time.Millisecond))
}
