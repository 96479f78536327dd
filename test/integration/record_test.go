package integration

import (
	"bufio"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/auditlog"
)

// envRecordRole makes the test binary record's command ("child") or the
// other local user ("attacker").
const envRecordRole = "KI_TEST_RECORD_ROLE"

// recordRole runs the test binary as record's command or as the attacker.
func recordRole(role string) int {
	switch role {
	case "child":
		// What the command holds: its environment and its kubeconfig.
		kc := os.Getenv("KUBECONFIG")
		b, _ := os.ReadFile(kc)
		fmt.Printf("ENV %q\nKUBECONFIG %q\n", os.Environ(), b)
		cfg, err := clientcmd.BuildConfigFromFlags("", kc)
		if err != nil {
			fmt.Println("config:", err)
			return 2
		}
		fmt.Printf("URL %s\nready\n", cfg.Host)
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return 2
		}
		for _, p := range []string{"/api/v1/namespaces/default/pods", "/api/v1/namespaces/default/secrets"} {
			resp, err := hc.Get(cfg.Host + p)
			if err != nil {
				fmt.Println("get:", err)
				return 2
			}
			resp.Body.Close()
		}
		// Wait for the attacker's turn to end (bounded).
		for i := 0; i < 300 && os.Getenv("KI_TEST_GO") != ""; i++ {
			if _, err := os.Stat(os.Getenv("KI_TEST_GO")); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		return 3
	case "attacker":
		_, err := os.ReadFile(os.Getenv("KI_TEST_KUBECONFIG"))
		fmt.Printf("read kubeconfig: %v\n", err)
		c := &http.Client{Timeout: 5 * time.Second,
			Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		for _, auth := range []string{"", "Bearer guess"} {
			req, _ := http.NewRequest("GET", os.Getenv("KI_TEST_URL")+"/api/v1/namespaces/default/secrets", nil)
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := c.Do(req)
			if err != nil {
				fmt.Printf("request %q: %v\n", auth, err)
				continue
			}
			resp.Body.Close()
			fmt.Printf("request %q: %d\n", auth, resp.StatusCode)
		}
		return 0
	}
	return 2
}

// TestRecordAgainstAnotherUser: record's endpoint listens on 127.0.0.1,
// which every local user reaches. Another user (uid 65534) cannot read
// the command's kubeconfig and is refused without the one-time token;
// nothing of theirs reaches the cluster or the recording. The context's
// own token never reaches the command's environment or kubeconfig, and
// record exits with the command's code.
func TestRecordAgainstAnotherUser(t *testing.T) {
	attacker := asAnotherUser(t, publicCopy(t))
	const secret = "the-context-s-own-token-4d1f"
	var mu sync.Mutex
	var seen []string
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/secrets") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","reason":"Forbidden","code":403,"message":`+
				`"secrets is forbidden: User \"ci\" cannot list resource \"secrets\" in API group \"\" in the namespace \"default\""}`)
			return
		}
		_, _ = io.WriteString(w, `{"kind":"PodList","apiVersion":"v1","items":[]}`)
	}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	goFile := filepath.Join(dir, "go")
	recording := filepath.Join(dir, "rec.jsonl")
	rec, out, lines, stderr := startRecord(t, up, secret, recording, "KI_TEST_GO="+goFile, "KUBECONFIG=/nonexistent")
	var childOut []string
	url, childKubeconfig := "", ""
	for lines.Scan() && lines.Text() != "ready" {
		l := lines.Text()
		childOut = append(childOut, l)
		if u, ok := strings.CutPrefix(l, "URL "); ok {
			url = u
		}
	}
	for _, l := range childOut {
		if strings.HasPrefix(l, "ENV ") {
			for _, kv := range strings.Fields(strings.Trim(strings.TrimPrefix(l, "ENV "), "[]")) {
				if v, ok := strings.CutPrefix(strings.Trim(kv, `"`), "KUBECONFIG="); ok {
					childKubeconfig = v
				}
			}
		}
	}
	require.NotEmpty(t, url, childOut)
	require.NotEmpty(t, childKubeconfig)
	assert.True(t, strings.HasPrefix(url, "https://127.0.0.1:"), url)
	assert.NotContains(t, strings.Join(childOut, "\n"), secret, "the context's token reached the command")

	attacker.Env = []string{envRecordRole + "=attacker", "KI_TEST_URL=" + url, "KI_TEST_KUBECONFIG=" + childKubeconfig}
	got, err := attacker.CombinedOutput()
	require.NoError(t, err, string(got))
	assert.Contains(t, string(got), "read kubeconfig: open "+childKubeconfig+": permission denied")
	assert.Contains(t, string(got), `request "": 401`)
	assert.Contains(t, string(got), `request "Bearer guess": 401`)

	require.NoError(t, os.WriteFile(goFile, nil, 0o600))
	rest, _ := io.ReadAll(out)
	err = rec.Wait()
	exit, ok := errors.AsType[*exec.ExitError](err)
	require.True(t, ok, "record: %v %s %s", err, rest, stderr.String())
	assert.Equal(t, 3, exit.ExitCode(), "the command's exit code")
	assert.Contains(t, stderr.String(), "2 requests recorded (1 not seen allowed: refused, or undecided) in "+
		recording)
	_, err = os.Stat(childKubeconfig)
	assert.True(t, os.IsNotExist(err), "the command's kubeconfig is removed")

	mu.Lock()
	assert.Equal(t, []string{"/api/v1/namespaces/default/pods Bearer " + secret,
		"/api/v1/namespaces/default/secrets Bearer " + secret}, seen, "the command's requests alone")
	mu.Unlock()
	fi, err := os.Stat(recording)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	f, err := os.Open(recording)
	require.NoError(t, err)
	defer f.Close()
	l, err := auditlog.Read(f, auditlog.ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, []auditlog.Request{{Verb: "list", Resource: "pods", Namespace: "default", Code: 200,
		Decision: auditlog.Allow}, {Verb: "list", Resource: "secrets", Namespace: "default", Code: 403,
		Decision: auditlog.Forbid}}, l.Requests)
}

// TestRecordStoppedBySignal: record itself hung up (its terminal closed)
// or terminated, while the command runs: the command's process group is
// stopped, its kubeconfig and folder removed, and record ends (issue 56:
// the command was orphaned and its kubeconfig left behind).
func TestRecordStoppedBySignal(t *testing.T) {
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"kind":"PodList","apiVersion":"v1","items":[]}`)
	}))
	t.Cleanup(up.Close)
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			dir, tmp := t.TempDir(), t.TempDir()
			// The command waits for a file that never comes (30 s at most).
			rec, out, lines, stderr := startRecord(t, up, "t", filepath.Join(dir, "r.jsonl"),
				"KI_TEST_GO="+filepath.Join(dir, "never"), "TMPDIR="+tmp)
			for lines.Scan() && lines.Text() != "ready" {
			}
			folders, err := filepath.Glob(filepath.Join(tmp, "kubectl-impersonate-record-*"))
			require.NoError(t, err)
			require.Len(t, folders, 1, "the command runs with its folder")
			start := time.Now()
			require.NoError(t, rec.Process.Signal(sig))
			_, _ = io.Copy(io.Discard, out)
			err = rec.Wait()
			assert.Error(t, err, "record ends with the command stopped: %s", stderr.String())
			assert.Less(t, time.Since(start), 5*time.Second, "stopped within the grace, not after the command's 30 s")
			_, err = os.Stat(folders[0])
			assert.True(t, os.IsNotExist(err), "the command's folder and kubeconfig are removed: %v", err)
			assert.Contains(t, stderr.String(), "requests recorded", "record said what it recorded")
		})
	}
}

// startRecord starts record on a kubeconfig of server with token, its
// command the test binary as record's child (env added), and returns it,
// its stdout read line by line, and its stderr.
func startRecord(
	t *testing.T, server *httptest.Server, token, recording string, env ...string,
) (*exec.Cmd, io.Reader, *bufio.Scanner, *strings.Builder) {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: server.URL, CertificateAuthorityData: pem.EncodeToMemory(
		&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw})}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u", Namespace: "default"}
	kc.CurrentContext = "x"
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, kubeconfig))
	self, err := os.Executable()
	require.NoError(t, err)
	rec := exec.Command(binary, "record", "--kubeconfig="+kubeconfig, "-o", recording, "--", self)
	rec.Env = append(append(os.Environ(), envRecordRole+"=child"), env...)
	out, err := rec.StdoutPipe()
	require.NoError(t, err)
	stderr := &strings.Builder{}
	rec.Stderr = stderr
	require.NoError(t, rec.Start())
	t.Cleanup(func() { _ = rec.Process.Kill(); _ = rec.Wait() })
	lines := bufio.NewScanner(out)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	return rec, out, lines, stderr
}
