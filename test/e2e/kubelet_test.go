//go:build e2e

package e2e

// A stand-in kubelet: no container runtime can run here, so the node side of
// exec, attach-free logs and port-forward is simulated. It follows the
// kubelet's streaming API as kube-apiserver calls it (paths
// /exec/{namespace}/{pod}/{container}, /containerLogs/{namespace}/{pod}/{container}
// and /portForward/{namespace}/{pod}, from k8s.io/kubernetes pkg/kubelet/server/server.go) and
// serves the upgrades with the kubelet's own streaming server packages
// (k8s.io/cri-streaming/pkg/streaming, formerly in k8s.io/kubelet: SPDY and WebSocket remotecommand v1-v5,
// port-forward); only the "container" behind them is fake. Everything between
// kubectl and this server - kubectl, the impersonating proxy and
// kube-apiserver - is real.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	remotecommandconsts "k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	kubeletexec "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// fakeKubelet serves the streaming endpoints on 127.0.0.1 over TLS.
type fakeKubelet struct {
	srv  *http.Server
	port int
}

// startFakeKubelet listens on a free loopback port with the stack's
// serving certificate; stop it with close.
func startFakeKubelet(certFile, keyFile string) (*fakeKubelet, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/exec/{namespace}/{pod}/{container}", serveExec)
	mux.HandleFunc("/containerLogs/{namespace}/{pod}/{container}", serveLogs)
	mux.HandleFunc("/portForward/{namespace}/{pod}", servePortForward)
	k := &fakeKubelet{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, port: ln.Addr().(*net.TCPAddr).Port}
	go func() { _ = k.srv.ServeTLS(ln, certFile, keyFile) }()
	return k, nil
}

func (k *fakeKubelet) close() { _ = k.srv.Close() }

// shellPod starts a stand-in kubelet for the test and puts a Pod "shell"
// in ns (which exists) on node, whose kubelet it is: the Node at its port,
// the namespace's default service account, the Pod marked Running and
// Ready (kubectl port-forward insists on a running pod; no kubelet reports
// it).
func shellPod(t *testing.T, admin string, env []string, node, ns string) {
	t.Helper()
	kubelet, err := startFakeKubelet(st.certFile, st.keyFile)
	require.NoError(t, err)
	t.Cleanup(kubelet.close)
	kubectlApply(t, admin, fmt.Sprintf(`apiVersion: v1
kind: Node
metadata: {name: %[1]s}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: default, namespace: %[2]s}
---
apiVersion: v1
kind: Pod
metadata: {name: shell, namespace: %[2]s}
spec:
  nodeName: %[1]s
  containers: [{name: app, image: registry.k8s.io/pause:3.10}]
`, node, ns))
	for _, patch := range []struct{ kind, name, body string }{
		{"node", node, fmt.Sprintf(`{"status":{"addresses":[{"type":"InternalIP","address":"127.0.0.1"}],`+
			`"daemonEndpoints":{"kubeletEndpoint":{"Port":%d}}}}`, kubelet.port)},
		{"pod", "shell", `{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`},
	} {
		r := run(t, env, false, st.kubectl, "--kubeconfig="+admin, "patch", patch.kind, patch.name, "-n", ns,
			"--subresource=status", "--type=merge", "-p", patch.body)
		require.Equal(t, 0, r.code, r.stderr)
	}
}

func serveExec(w http.ResponseWriter, r *http.Request) {
	opts, err := kubeletexec.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	kubeletexec.ServeExec(w, r, fakeContainer{}, r.PathValue("pod"), "", r.PathValue("container"),
		r.URL.Query()["command"], opts, 30*time.Second, 30*time.Second, remotecommandconsts.SupportedStreamingProtocols)
}

// fakeContainer runs three commands: echo ARGS, cat (stdin to stdout) and
// exit N (a non-zero exit status kubectl must report).
type fakeContainer struct{}

func (fakeContainer) ExecInContainer(_ context.Context, _ string, _ string, _ string, cmd []string, in io.Reader, out, _ io.WriteCloser, _ bool, _ <-chan kubeletexec.TerminalSize, _ time.Duration) error {
	if len(cmd) == 0 {
		return fmt.Errorf("no command")
	}
	switch cmd[0] {
	case "echo":
		_, err := fmt.Fprintln(out, strings.Join(cmd[1:], " "))
		return err
	case "cat":
		if in == nil {
			return fmt.Errorf("cat needs stdin (-i)")
		}
		_, err := io.Copy(out, in)
		return err
	case "exit":
		code := 1
		if len(cmd) > 1 {
			_, _ = fmt.Sscanf(cmd[1], "%d", &code)
		}
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated"), Code: code}
	}
	return utilexec.CodeExitError{Err: fmt.Errorf("%s: not found", cmd[0]), Code: 127}
}

// serveLogs streams "line N" every 200 ms, ten lines when following, three
// otherwise, flushing each so a follower sees them one by one.
func serveLogs(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	n := 3
	if r.URL.Query().Get("follow") == "true" {
		n = 10
	}
	fl, _ := w.(http.Flusher)
	for i := 1; i <= n; i++ {
		if _, err := fmt.Fprintf(w, "%s line %d\n", r.PathValue("container"), i); err != nil {
			return
		}
		if fl != nil {
			fl.Flush()
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func servePortForward(w http.ResponseWriter, r *http.Request) {
	opts, err := portforward.NewV4Options(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	portforward.ServePortForward(w, r, echoPort{}, r.PathValue("pod"), "", opts, 30*time.Second, 30*time.Second, portforward.SupportedProtocols)
}

// echoPort answers every forwarded connection by echoing what it reads.
type echoPort struct{}

func (echoPort) PortForward(_ context.Context, _ string, _ string, _ int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	_, err := io.Copy(stream, stream)
	return err
}
