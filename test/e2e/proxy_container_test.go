//go:build e2e

// The proxy as it ships: the release's image (make snapshot-host, built by
// hack/tools/oci-image from goreleaser's binaries) run by podman with the
// deploy manifests' arguments, user and read-only root, in front of the
// kube-apiserver whose authorizer chain has a webhook before RBAC; with the
// constrained impersonation RBAC on Kubernetes 1.36+ (the classic one on
// 1.35), kube-apiserver's audit log the witness.

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testkit"
)

// podman runs podman with its storage in dir (vfs) and the sandbox's
// containers.conf (runc; no ulimits to raise).
type podman struct{ dir string }

func newPodman(t *testing.T) podman {
	t.Helper()
	_, err := exec.LookPath("podman")
	require.NoError(t, err, "podman is missing (test/e2e/run.sh installs Debian's podman and runc)")
	dir, err := os.MkdirTemp("", "ki-podman-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.WriteFile(filepath.Join(dir, "containers.conf"), []byte("[containers]\ndefault_ulimits = []\n[engine]\nruntime = \"runc\"\n"), 0o644))
	return podman{dir: dir}
}

func (p podman) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "podman", append([]string{"--root", filepath.Join(p.dir, "root"), "--runroot", filepath.Join(p.dir, "run"),
		"--tmpdir", filepath.Join(p.dir, "tmp"), "--storage-driver", "vfs", "--cgroup-manager", "cgroupfs", "--events-backend", "none"}, args...)...)
	cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+filepath.Join(p.dir, "containers.conf"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("podman %s: %w: %s", strings.Join(args, " "), err, out.String())
	}
	return strings.TrimSpace(out.String()), err
}

// manifestDocs splits a multi-document YAML file.
func manifestDocs(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var docs []map[string]any
	for _, d := range strings.Split(string(b), "\n---\n") {
		var m map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(d), &m))
		if m != nil {
			docs = append(docs, m)
		}
	}
	return docs
}

// dig walks a YAML tree by keys and list indexes.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// writeOwned writes a file the container's user (65532) owns and alone may
// read, in a folder it may enter.
func writeOwned(t *testing.T, dir, name string, data []byte) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.Chmod(dir, 0o755))
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, data, 0o600))
	require.NoError(t, os.Chown(path, 65532, 65532))
}

// refusal is a request the proxy's constrained credential must not make.
type refusal struct {
	what, method, path string
	headers            map[string]string
}

// TestProxyContainer runs the proxy from the release's image, as the deploy
// manifests describe it (arguments, user, read-only root, the in-cluster
// service account), and serves alice through it; then, on 1.36+, shows that
// the constrained credential cannot impersonate a service account, a node
// or a verb it was not granted.
func TestProxyContainer(t *testing.T) {
	dist := os.Getenv("KI_IMAGE_DIST")
	require.NotEmpty(t, dist, "KI_IMAGE_DIST: make e2e builds the snapshot and its image first (make snapshot-host)")
	refBytes, err := os.ReadFile(filepath.Join(dist, "image.ref"))
	require.NoError(t, err)
	ref := strings.TrimSpace(string(refBytes))
	tag := ref[strings.LastIndex(ref[:strings.Index(ref, "@")], ":")+1 : strings.Index(ref, "@")]

	// The manifests as generated for this image: the Deployment names it
	// by tag and digest.
	docs := manifestDocs(t, filepath.Join(dist, "deploy", "proxy", "proxy.yaml"))
	var deploy, mapping map[string]any
	for _, d := range docs {
		switch d["kind"] {
		case "Deployment":
			deploy = d
		case "ConfigMap":
			mapping = d
		}
	}
	require.NotNil(t, deploy)
	require.NotNil(t, mapping)
	container := dig(deploy, "spec", "template", "spec", "containers", 0)
	assert.Equal(t, ref, dig(container, "image"), "the manifest names the release's image by tag and digest")
	assert.Equal(t, true, dig(deploy, "spec", "template", "spec", "securityContext", "runAsNonRoot"))
	assert.Equal(t, true, dig(container, "securityContext", "readOnlyRootFilesystem"))

	api := st.api["webhook"]
	admin, err := st.adminKubeconfig(api)
	require.NoError(t, err)
	minor, err := strconv.Atoi(strings.TrimPrefix(os.Getenv("KI_E2E_K8S"), "1."))
	require.NoError(t, err, "KI_E2E_K8S")
	rbacFile := "rbac-classic.yaml"
	if minor >= 36 {
		rbacFile = "rbac-constrained.yaml" // constrained impersonation is on by default from 1.36
	}
	env := baseEnv(t.TempDir())
	for _, f := range []string{filepath.Join(dist, "deploy", "proxy", "proxy.yaml"), filepath.Join("..", "..", "deploy", "proxy", rbacFile)} {
		r := run(t, env, false, st.kubectl, "--kubeconfig="+admin, "apply", "-f", f)
		require.Equal(t, 0, r.code, "applying %s: %s", f, r.stderr)
	}
	tok := run(t, env, false, st.kubectl, "--kubeconfig="+admin, "create", "token", "proxy", "-n", "kubectl-impersonate", "--duration=1h")
	require.Equal(t, 0, tok.code, tok.stderr)
	saToken := strings.TrimSpace(tok.stdout)

	// What a pod of the Deployment has: the service account's token and CA
	// at their in-cluster paths, the TLS Secret, the mapping ConfigMap (with
	// this stack's issuer, its CA and the client as audience).
	files := t.TempDir()
	require.NoError(t, os.Chmod(files, 0o755))
	caPEM, err := os.ReadFile(st.caFile)
	require.NoError(t, err)
	writeOwned(t, filepath.Join(files, "sa"), "token", []byte(saToken))
	writeOwned(t, filepath.Join(files, "sa"), "ca.crt", caPEM)
	writeOwned(t, filepath.Join(files, "sa"), "namespace", []byte("kubectl-impersonate"))
	for name, src := range map[string]string{"tls.crt": st.certFile, "tls.key": st.keyFile} {
		b, err := os.ReadFile(src)
		require.NoError(t, err)
		writeOwned(t, filepath.Join(files, "tls"), name, b)
	}
	var authn map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(dig(mapping, "data", "authentication-config.yaml").(string)), &authn))
	issuer := dig(authn, "jwt", 0, "issuer").(map[string]any)
	issuer["url"], issuer["audiences"], issuer["certificateAuthority"] = st.issuer, []string{publicClient}, string(caPEM)
	authnYAML, err := yaml.Marshal(authn)
	require.NoError(t, err)
	writeOwned(t, filepath.Join(files, "mapping"), "authentication-config.yaml", authnYAML)

	port, err := testkit.FreePort()
	require.NoError(t, err)
	var args []string
	for _, a := range dig(container, "args").([]any) {
		s := a.(string)
		if s == "--listen=:8443" {
			s = fmt.Sprintf("--listen=127.0.0.1:%d", port) // the host's network: a port of its own
		}
		args = append(args, s)
	}
	apiURL, err := url.Parse(api.url)
	require.NoError(t, err)

	pm := newPodman(t)
	_, err = pm.run(t, "pull", "oci:"+filepath.Join(dist, "image")+":"+tag)
	require.NoError(t, err)
	id, err := pm.run(t, "images", "-q")
	require.NoError(t, err)
	id = strings.Fields(id)[0]
	user, err := pm.run(t, "image", "inspect", "--format", "{{.Config.User}} {{.Os}}/{{.Architecture}}", id)
	require.NoError(t, err)
	assert.Equal(t, "65532:65532 linux/amd64", user)

	name := fmt.Sprintf("ki-proxy-%d", time.Now().UnixNano())
	logs := filepath.Join(st.logs, "TestProxyContainer-podman.log")
	runArgs := []string{"run", "-d", "--name", name, "--network=host", "--read-only", "--cap-drop=ALL", "--security-opt=no-new-privileges",
		"-e", "KUBERNETES_SERVICE_HOST=" + apiURL.Hostname(), "-e", "KUBERNETES_SERVICE_PORT=" + apiURL.Port(),
		"-v", filepath.Join(files, "sa") + ":/var/run/secrets/kubernetes.io/serviceaccount:ro",
		"-v", filepath.Join(files, "tls") + ":/tls:ro", "-v", filepath.Join(files, "mapping") + ":/mapping:ro", id}
	_, err = pm.run(t, append(runArgs, args...)...)
	require.NoError(t, err)
	t.Cleanup(func() {
		out, _ := pm.run(t, "logs", name)
		_ = os.WriteFile(logs, []byte(out), 0o644)
		_, _ = pm.run(t, "rm", "-f", "-t", "2", name)
	})
	proxyURL := fmt.Sprintf("https://127.0.0.1:%d", port)
	if err := waitHTTP(proxyURL+"/readyz", nil, 60*time.Second, st.tlsClient()); err != nil {
		out, _ := pm.run(t, "logs", name)
		require.NoError(t, err, "the proxy's container: %s", out)
	}
	// The process runs as the image's user, not root.
	pid, err := pm.run(t, "inspect", "--format", "{{.State.Pid}}", name)
	require.NoError(t, err)
	status, err := os.ReadFile("/proc/" + pid + "/status")
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^Uid:\s+65532\s+65532\s+65532\s+65532$`, string(status))

	// alice through the container: her RBAC, the webhook's chain.
	alice := newPerson(t, "alice", &apiserver{mode: "proxy", url: proxyURL})
	r := alice.kubectl("get", "pods", "-n", "team-a")
	require.Equal(t, 0, r.code, "alice lists pods through the proxy's container: %s", r.stderr)
	r = alice.kubectl("get", "pods", "-n", "team-b")
	assert.Equal(t, 1, r.code, "RBAC applies to alice: %s", r.stderr)
	sa := "system:serviceaccount:kubectl-impersonate:proxy"
	// 1.36+: allowed by constrained impersonation, as the audit log says.
	wantConstraint := map[bool]string{true: "impersonate:user-info", false: ""}[minor >= 36]
	served := 0
	for _, e := range readAudit(t, api.auditLog) {
		if e.User.Username == sa && e.ImpersonatedUser != nil && e.ImpersonatedUser.Username == "oidc:alice@example.com" &&
			e.ResponseStatus != nil && e.ResponseStatus.Code == http.StatusOK {
			served++
			constraint := ""
			if e.AuthenticationMetadata != nil {
				constraint = e.AuthenticationMetadata.ImpersonationConstraint
			}
			assert.Equal(t, wantConstraint, constraint, "the impersonation constraint of %s", e.RequestURI)
		}
	}
	assert.Positive(t, served, "kube-apiserver's audit log: the proxy's service account served alice by impersonation")

	// The credential alone, as whoever stole it would use it.
	ask := func(method, path string, headers map[string]string) int {
		req, err := http.NewRequest(method, api.url+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+saToken)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := st.tlsClient().Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	alicePods := map[string]string{"Impersonate-User": "oidc:alice@example.com", "Impersonate-Group": "oidc:developers"}
	require.Equal(t, http.StatusOK, ask("GET", "/api/v1/namespaces/team-a/pods", alicePods), "as alice, listing pods")
	if minor < 36 {
		t.Logf("Kubernetes 1.%d: the classic impersonate RBAC (constrained impersonation is alpha and off by default before 1.36)", minor)
		return
	}
	refused := []refusal{
		{"a service account", "GET", "/api/v1/namespaces/team-a/pods", map[string]string{"Impersonate-User": "system:serviceaccount:team-a:default"}},
		{"a node", "GET", "/api/v1/nodes", map[string]string{"Impersonate-User": "system:node:node-1"}},
		{"system:masters", "GET", "/api/v1/namespaces/team-a/pods", map[string]string{"Impersonate-User": "oidc:alice@example.com", "Impersonate-Group": "system:masters"}},
		{"a verb not granted (post on a non-resource URL)", "POST", "/version", alicePods},
	}
	for _, c := range refused {
		assert.Equal(t, http.StatusForbidden, ask(c.method, c.path, c.headers), "the constrained credential impersonating %s", c.what)
	}
	// The audit log's word: each refusal was the service account's, with 403.
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := 0
		for _, e := range readAudit(t, api.auditLog) {
			if e.User.Username == sa && e.ResponseStatus != nil && e.ResponseStatus.Code == http.StatusForbidden &&
				slices.ContainsFunc(refused, func(c refusal) bool { return strings.HasPrefix(e.RequestURI, c.path) }) {
				n++
			}
		}
		if n >= len(refused) || time.Now().After(deadline) {
			assert.GreaterOrEqual(t, n, len(refused), "403s by %s in the audit log", sa)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
}
