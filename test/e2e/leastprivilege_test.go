//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
)

// lpSession is the kubectl session record runs and the fresh identity
// replays: get, list, watch, create, patch, logs and exec (WebSocket, and
// SPDY), a Helm install, then the Python client's list, in $NS with
// $KUBECONFIG.
const lpSession = `set -e
kubectl get configmap settings -o name
kubectl get pods -o name
timeout 3 kubectl get pods --watch-only -o name || [ $? = 124 ]
kubectl create configmap made-by-session --from-literal=k=v -o name
kubectl patch configmap settings --type=merge -p '{"data":{"k":"v2"}}' -o name
kubectl logs shell | head -n 1
kubectl exec shell -- echo websocket
KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false kubectl exec shell -- echo spdy
helm upgrade --install web "$CHART_DIR"
/usr/bin/python3 "$CLIENT" "$KUBECONFIG" "$NS" 1
`

// TestLeastPrivilegeFromARecording: record a kubectl session and the
// Python client as an identity that holds everything in the namespace
// (cluster-admin through a RoleBinding: no controller aggregates admin here);
// least-privilege prints Roles; kube-apiserver, with them bound to a
// fresh identity, lets the same session pass and refuses its
// neighbourhood (another verb, another object, another namespace, a
// secret). The audit log of the same session gives the same Roles.
func TestLeastPrivilegeFromARecording(t *testing.T) {
	api := st.api["legacy"]
	admin, err := st.adminKubeconfig(api)
	require.NoError(t, err)
	home := t.TempDir()
	env := baseEnv(home)
	ns, other := "least-priv", "least-priv-other"
	kubectlApply(t, admin, fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: v1
kind: Namespace
metadata: {name: %[2]s}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: recorder, namespace: %[1]s}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: fresh, namespace: %[1]s}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: %[1]s}
data: {k: v}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: %[2]s}
data: {k: v}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: unrelated, namespace: %[1]s}
---
apiVersion: v1
kind: Secret
metadata: {name: keys, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: recorder-admin, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: recorder, namespace: %[1]s}]
`, ns, other))
	kubectl := func(args ...string) result {
		t.Helper()
		return run(t, env, false, append([]string{st.kubectl, "--kubeconfig=" + admin}, args...)...)
	}
	shellPod(t, admin, env, "least-priv-node", ns)

	saKubeconfig := func(sa string) string { return serviceAccountKubeconfig(t, admin, api, home, ns, sa) }
	client, err := filepath.Abs("clients/list_pods.py")
	require.NoError(t, err)
	chart, err := filepath.Abs("testdata/chart-web")
	require.NoError(t, err)
	// kubectl and helm on PATH are the pinned ones; the session's own variables.
	bin := t.TempDir()
	require.NoError(t, os.Symlink(st.kubectl, filepath.Join(bin, "kubectl")))
	require.NoError(t, os.Symlink(filepath.Join(st.tools, "helm"), filepath.Join(bin, "helm")))
	sessionEnv := append(append([]string{}, env...), "PATH="+bin+":"+os.Getenv("PATH"), "NS="+ns, "CLIENT="+client,
		"CHART_DIR="+chart)

	// Record, as the recorder.
	recorderKC := saKubeconfig("recorder")
	recording := filepath.Join(home, "session.jsonl")
	r := run(t, sessionEnv, false, st.ki, "record", "--kubeconfig="+recorderKC, "-o", recording, "--", "sh", "-c", lpSession)
	require.Equal(t, 0, r.code, "the recorded session: %s %s", r.stdout, r.stderr)
	assert.Contains(t, r.stdout, "websocket\n")
	assert.Contains(t, r.stdout, "spdy\n")
	assert.Contains(t, r.stdout, `Release "web" does not exist. Installing it now.`, "Helm")
	assert.Contains(t, r.stdout, `"ok": true`, "the Python client")
	assert.Contains(t, r.stderr, "(0 not seen allowed: refused, or undecided) in "+recording)
	key := recordingKey(t, r.stderr)
	b, err := os.ReadFile(recording)
	require.NoError(t, err)
	t.Logf("the recording: %d events", strings.Count(string(b), "\n"))

	// kube-apiserver's audit log of the same session gives the same Roles
	// (read before least-privilege --held asks the cluster as the recorder).
	var fromAudit struct {
		Items []json.RawMessage `json:"items"`
	}
	subject := "--subject=ServiceAccount:" + ns + ":fresh"
	r = run(t, env, false, st.ki, "least-privilege", "--from", recording, "--recording-key", key, subject,
		"--name=session", "--held=false", "-o", "json")
	require.Equal(t, 0, r.code, r.stderr)
	var fromRecording struct {
		Items []json.RawMessage `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &fromRecording))
	require.NotEmpty(t, fromRecording.Items)
	rolesOf := func(items []json.RawMessage) map[string][]rbacv1.PolicyRule {
		out := map[string][]rbacv1.PolicyRule{}
		for _, raw := range items {
			var role rbacv1.Role
			require.NoError(t, json.Unmarshal(raw, &role))
			if role.Kind == "Role" || role.Kind == "ClusterRole" {
				out[role.Kind+"/"+role.Namespace] = role.Rules
			}
		}
		return out
	}
	// The audit log's lines of a watch are written when kube-apiserver
	// ends it: read it again until they are there (bounded).
	want := rolesOf(fromRecording.Items)
	var got map[string][]rbacv1.PolicyRule
	for range 50 {
		r = run(t, env, false, st.ki, "least-privilege", "--from-audit", api.auditLog,
			"--audit-user=system:serviceaccount:"+ns+":recorder", subject, "--name=session", "--held=false", "-o", "json")
		require.Equal(t, 0, r.code, r.stderr)
		fromAudit.Items = nil
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &fromAudit))
		if got = rolesOf(fromAudit.Items); assert.ObjectsAreEqual(want, got) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	assert.Equal(t, want, got, "the audit log's Roles are the recording's")

	// The least privilege, bound to fresh.
	r = run(t, env, false, st.ki, "least-privilege", "--kubeconfig="+recorderKC, "--from", recording,
		"--recording-key", key, subject, "--name=session")
	require.Equal(t, 0, r.code, r.stderr)
	generated := r.stdout
	t.Logf("least-privilege:\n%s", generated)
	assert.Regexp(t, `# holds \d+ cells in `+ns+`, used \d+`, generated)
	var held, used int
	_, err = fmt.Sscanf(generated[strings.Index(generated, "# holds "):], "# holds %d cells in "+ns+", used %d", &held, &used)
	require.NoError(t, err)
	assert.Greater(t, held, 3*used, "the admin role holds far more than the session used")
	assert.Contains(t, generated, "# risk: create pods/exec in "+ns+": credentials: ")
	require.NoError(t, adminKubectl(t, admin, generated, 60*time.Second, "apply", "-f", "-"))
	// What the session made goes, so that its replay makes it again.
	r = kubectl("delete", "configmap", "made-by-session", "web-settings", "-n", ns)
	require.Equal(t, 0, r.code, r.stderr)
	r = kubectl("delete", "serviceaccount", "web", "-n", ns)
	require.Equal(t, 0, r.code, r.stderr)
	r = kubectl("delete", "secret", "-l", "owner=helm", "-n", ns)
	require.Equal(t, 0, r.code, r.stderr)

	// The same session as fresh: it passes.
	freshKC := saKubeconfig("fresh")
	freshEnv := append(append([]string{}, sessionEnv...), "KUBECONFIG="+freshKC)
	r = run(t, freshEnv, false, "sh", "-c", lpSession)
	require.Equal(t, 0, r.code, "the session replayed as fresh: %s %s", r.stdout, r.stderr)
	assert.Contains(t, r.stdout, `"ok": true`, "the Python client, as fresh")
	assert.Contains(t, r.stdout, `Release "web" does not exist. Installing it now.`, "Helm, as fresh")

	// Its neighbourhood: refused by kube-apiserver.
	for _, probe := range [][]string{
		{"delete", "configmap", "settings"},                                   // another verb
		{"get", "configmap", "unrelated"},                                     // another object
		{"get", "configmap", "settings", "-n", other},                         // another namespace
		{"get", "secret", "keys"},                                             // a secret
		{"get", "pods", "-A"},                                                 // every namespace
		{"create", "deployment", "web", "--image=registry.k8s.io/pause:3.10"}, // another resource
	} {
		r = run(t, freshEnv, false, append([]string{st.kubectl}, probe...)...)
		assert.NotEqual(t, 0, r.code, "%v", probe)
		assert.Contains(t, r.stderr, `User "system:serviceaccount:`+ns+`:fresh" cannot`, "%v", probe)
	}
}

// recordingKey is the key record's last line printed for its recording.
func recordingKey(t *testing.T, stderr string) string {
	t.Helper()
	m := regexp.MustCompile(`--recording-key (ed25519:\S+)`).FindStringSubmatch(stderr)
	require.Len(t, m, 2, "record prints the key it sealed the recording with: %s", stderr)
	return m[1]
}

// serviceAccountKubeconfig writes a kubeconfig of service account sa's
// token (an hour), in ns, and returns its path.
func serviceAccountKubeconfig(t *testing.T, admin string, api *apiserver, dir, ns, sa string) string {
	t.Helper()
	r := run(t, baseEnv(dir), false, st.kubectl, "--kubeconfig="+admin, "create", "token", sa, "-n", ns,
		"--duration=1h")
	require.Equal(t, 0, r.code, r.stderr)
	path := filepath.Join(dir, sa+".kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: e2e, cluster: {server: %s, certificate-authority: %s}}]
users: [{name: %s, user: {token: %s}}]
contexts: [{name: e2e, context: {cluster: e2e, user: %s, namespace: %s}}]
current-context: e2e
`, api.url, st.caFile, sa, strings.TrimSpace(r.stdout), sa, ns)), 0o600))
	return path
}

// evidenceSession is what the profiled robot runs under record: an allowed
// list; kubectl --as it may not use (kube-apiserver's impersonation
// refuses it before its authorizer decides, in kube-system too); and,
// with curl over HTTP/1.1, its own Impersonate-* headers named in
// Connection (dropped in transit by a reverse proxy that reads them first).
const evidenceSession = `set -e
kubectl get pods -o name
if kubectl get pods --as=admin -o name 2>/dev/null; then echo "impersonated?"; exit 9; fi
if kubectl create deployment x -n kube-system --image=registry.k8s.io/pause:3.10 --as=admin 2>/dev/null; then exit 9; fi
server=$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d > "$HOME/record-ca.pem"
token=$(kubectl config view --raw --minify -o jsonpath='{.users[0].user.token}')
code=$(curl -s -o /dev/null -w '%{http_code}' --http1.1 --cacert "$HOME/record-ca.pem" \
  -H "Authorization: Bearer $token" -H "Impersonate-User: admin" -H "Impersonate-Group: system:masters" \
  -H "Connection: close, Impersonate-User, Impersonate-Group" "$server/api/v1/namespaces/kube-system/secrets")
echo "connection trick: $code"
`

// TestLeastPrivilegeGrantsOnlyWhatTheClusterAllowed (issue 56): what the
// profiled identity tries and the cluster refuses or never decides is
// granted by none of least-privilege's inputs: a recording with a refused
// kubectl --as and the Connection: trick (refused by record's endpoint),
// kube-apiserver's audit log with the same impersonated requests (403
// before the authorizer: no decision), and the impersonating proxy's log
// of a request its caller abandoned. The allowed list is granted, so the
// run proves it can grant.
func TestLeastPrivilegeGrantsOnlyWhatTheClusterAllowed(t *testing.T) {
	api := st.api["legacy"]
	admin, err := st.adminKubeconfig(api)
	require.NoError(t, err)
	home := t.TempDir()
	env := baseEnv(home)
	const ns = "lp-evidence"
	kubectlApply(t, admin, `apiVersion: v1
kind: Namespace
metadata: {name: lp-evidence}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: robot, namespace: lp-evidence}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: list-pods, namespace: lp-evidence}
rules: [{apiGroups: [""], resources: [pods], verbs: [list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: robot-list-pods, namespace: lp-evidence}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: list-pods}
subjects: [{kind: ServiceAccount, name: robot, namespace: lp-evidence}]
`)
	robot := serviceAccountKubeconfig(t, admin, api, home, ns, "robot")
	bin := t.TempDir()
	require.NoError(t, os.Symlink(st.kubectl, filepath.Join(bin, "kubectl")))
	sessionEnv := append(append([]string{}, env...), "PATH="+bin+":"+os.Getenv("PATH"))
	recording := filepath.Join(home, "evidence.jsonl")
	r := run(t, sessionEnv, false, st.ki, "record", "--kubeconfig="+robot, "-o", recording, "--", "sh", "-c",
		evidenceSession)
	require.Equal(t, 0, r.code, "the recorded session: %s %s", r.stdout, r.stderr)
	assert.Contains(t, r.stdout, "connection trick: 403", "record's endpoint refuses the Connection: trick")

	type policy struct {
		Items []struct {
			Kind     string                     `json:"kind"`
			Metadata struct{ Namespace string } `json:"metadata"`
			Rules    []rbacv1.PolicyRule        `json:"rules"`
		} `json:"items"`
	}
	onlyListPods := func(what string, args ...string) string {
		t.Helper()
		r := run(t, env, false, append([]string{st.ki, "least-privilege", "--held=false", "-o", "json"}, args...)...)
		require.Equal(t, 0, r.code, r.stderr)
		var p policy
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &p), r.stdout)
		var roles []string
		for _, it := range p.Items {
			if it.Kind == "Role" || it.Kind == "ClusterRole" {
				b, _ := json.Marshal(it.Rules)
				roles = append(roles, it.Kind+"/"+it.Metadata.Namespace+" "+string(b))
			}
		}
		assert.Equal(t, []string{`Role/` + ns + ` [{"verbs":["list"],"apiGroups":[""],"resources":["pods"]}]`}, roles,
			"%s: the allowed list alone is granted", what)
		t.Logf("%s: %s", what, strings.TrimSpace(r.stderr))
		return r.stderr
	}
	summary := onlyListPods("the recording", "--from", recording, "--recording-key", recordingKey(t, r.stderr))
	assert.Regexp(t, `not granted: \d+ refused by the cluster, [1-9]\d* undecided`, summary,
		"the refused impersonations (kubectl --as) are undecided: the answer does not say the impersonation passed")

	// kube-apiserver's own audit log of the same session: the impersonated
	// requests were refused before its authorizer decided (no decision).
	var audit string
	for range 50 { // the blocking audit log has them once answered; bounded
		audit = onlyListPods("the audit log", "--from-audit", api.auditLog,
			"--audit-user=system:serviceaccount:"+ns+":robot")
		if regexp.MustCompile(`[1-9]\d* undecided`).MatchString(audit) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	assert.Regexp(t, `[1-9]\d* undecided`, audit, "the refused impersonations are undecided")

	// The impersonating proxy, its upstream a black hole: alice's request,
	// abandoned after 2 s, is the proxy's own 502, never the cluster's.
	hole, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = hole.Close() })
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				_ = c.Close()
			}
		}()
		for {
			c, err := hole.Accept()
			if err != nil {
				return
			}
			held = append(held, c) // accepted, never answered
		}
	}()
	proxyURL, proxyAudit := startProxyAt(t, "proxy", "https://"+hole.Addr().String(), proxyToken, "/healthz",
		"--oidc-issuer-url="+st.issuer, "--oidc-certificate-authority="+st.caFile, "--oidc-client-id="+publicClient,
		"--oidc-username-claim=email", "--oidc-username-prefix=proxy:")
	alice := newPerson(t, "alice", &apiserver{mode: "proxy", url: proxyURL})
	r = alice.kubectl("delete", "--raw", "/api/v1/namespaces/team-a/pods/web", "--request-timeout=2s")
	assert.NotEqual(t, 0, r.code, "abandoned: %s", r.stderr)
	var line []byte
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(proxyAudit)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, `"path":"/api/v1/namespaces/team-a/pods/web"`) {
				line = []byte(l)
				return true
			}
		}
		return false
	}, 10*time.Second, 100*time.Millisecond, "the proxy writes its line once the caller is gone")
	assert.Contains(t, string(line), `"code":502`)
	assert.Contains(t, string(line), `"answered":false`)
	r = run(t, env, false, st.ki, "least-privilege", "--held=false", "-o", "json", "--from-audit", proxyAudit,
		"--audit-user=proxy:alice@example.com")
	require.Equal(t, 0, r.code, r.stderr)
	var p policy
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &p))
	assert.Empty(t, p.Items, "the abandoned delete is granted nothing")
	assert.Contains(t, r.stderr, "1 undecided", "and counted")
}
