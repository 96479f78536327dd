package privilege

import (
	"bytes"
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/auditlog"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/risk"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rolegen"
	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/kubecode/linked"
)

// envChild makes the test binary record's command: it lists the pods of
// its namespace through its kubeconfig, and exits with the code given.
const envChild = "KI_TEST_PRIVILEGE_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(envChild) == "sleep" {
		// A command that starts one of its own and waits: both are
		// record's to stop.
		grand := exec.Command("sleep", "60")
		if err := grand.Start(); err != nil {
			os.Exit(100)
		}
		_ = os.WriteFile(os.Getenv("KI_TEST_PIDS"), fmt.Appendf(nil, "%d %d", os.Getpid(), grand.Process.Pid), 0o600)
		_ = grand.Wait()
		os.Exit(0)
	}
	if code := os.Getenv(envChild); code != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
		if err != nil {
			fmt.Println(err)
			os.Exit(100)
		}
		ns, _, _ := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(),
			nil).Namespace()
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			os.Exit(100)
		}
		resp, err := hc.Get(cfg.Host + "/api/v1/namespaces/" + ns + "/pods")
		if err != nil {
			fmt.Println(err)
			os.Exit(100)
		}
		resp.Body.Close()
		var n int
		_, _ = fmt.Sscan(code, &n)
		os.Exit(n)
	}
	os.Exit(m.Run())
}

func streams() (genericiooptions.IOStreams, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, &out, &errOut
}

func TestRecordRunsTheCommandAndExitsWithItsCode(t *testing.T) {
	var seen []string
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.URL.Path+" "+r.Header.Get("Authorization"))
		_, _ = io.WriteString(w, `{"kind":"PodList","apiVersion":"v1","items":[]}`)
	}))
	defer up.Close()
	self, err := os.Executable()
	require.NoError(t, err)
	for _, code := range []int{0, 7} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			seen = nil
			file := filepath.Join(t.TempDir(), "rec.jsonl")
			s, _, errOut := streams()
			o := &RecordOptions{IOStreams: s, File: file, Command: []string{self, "--context=elsewhere"},
				namespace: "team-a", upstream: &rest.Config{Host: up.URL, BearerToken: "ctx",
					TLSClientConfig: rest.TLSClientConfig{Insecure: true}},
				global: &cmdutil.GlobalOptions{APIServer: linked.Code{}, Environ: func() []string {
					return []string{envChild + "=" + fmt.Sprint(code), "KUBECONFIG=/the/user/s", "NO_PROXY=corp"}
				}}}
			require.NoError(t, o.Validate())
			err := o.Run(context.Background())
			if code == 0 {
				require.NoError(t, err, errOut.String())
			} else {
				assert.Equal(t, cmdutil.ExitCode(code), err)
			}
			assert.Equal(t, []string{"/api/v1/namespaces/team-a/pods Bearer ctx"}, seen)
			assert.Contains(t, errOut.String(), "the command's own --context bypasses the recording")
			assert.Contains(t, errOut.String(), "1 requests recorded (0 not seen allowed: refused, or undecided) in "+
				file+", sealed by ed25519:")
			f, err := os.Open(file)
			require.NoError(t, err)
			defer f.Close()
			l, err := auditlog.Read(f, auditlog.ReadOptions{})
			require.NoError(t, err)
			assert.Equal(t, []auditlog.Request{{Verb: "list", Resource: "pods", Namespace: "team-a", Code: 200,
				Decision: auditlog.Allow}}, l.Requests)
		})
	}
}

func TestRecordCommandNotFound(t *testing.T) {
	s, _, errOut := streams()
	o := &RecordOptions{IOStreams: s, File: filepath.Join(t.TempDir(), "r"), Command: []string{"/nonexistent/cmd"},
		upstream: &rest.Config{Host: "https://127.0.0.1:1"},
		global:   &cmdutil.GlobalOptions{APIServer: linked.Code{}, Environ: func() []string { return nil }}}
	err := o.Run(context.Background())
	require.ErrorContains(t, err, "running /nonexistent/cmd")
	assert.Contains(t, errOut.String(), "0 requests recorded")
}

func TestChildEnv(t *testing.T) {
	got := childEnv([]string{"HOME=/h", "KUBECONFIG=/secret/kc", "kubecachedir=/c", "NO_PROXY=corp", "TOKEN=x"},
		"/tmp/d/kubeconfig", "/tmp/d/cache")
	assert.Equal(t, []string{"HOME=/h", "TOKEN=x", "NO_PROXY=corp,127.0.0.1,localhost",
		"no_proxy=127.0.0.1,localhost", "KUBECONFIG=/tmp/d/kubeconfig", "KUBECACHEDIR=/tmp/d/cache"}, got)
}

func TestParseSubject(t *testing.T) {
	tests := []struct {
		in      string
		want    rbacv1.Subject
		wantErr bool
	}{
		{in: "User:alice@example.com", want: rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName,
			Name: "alice@example.com"}},
		{in: "Group:team:a", want: rbacv1.Subject{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "team:a"}},
		{in: "ServiceAccount:ci:deployer", want: rbacv1.Subject{Kind: "ServiceAccount", Namespace: "ci",
			Name: "deployer"}},
		{in: "ServiceAccount:deployer", wantErr: true},
		{in: "ServiceAccount::x", wantErr: true},
		{in: "user:alice", wantErr: true},
		{in: "User:", wantErr: true},
		{in: "alice", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSubject(tt.in)
			if tt.wantErr {
				assert.ErrorContains(t, err, "give User:NAME, Group:NAME or ServiceAccount:NAMESPACE:NAME")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestLeastPrivilegeValidate(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, "nothing to read: give --from FILE"},
		{[]string{"--from-audit=a.log"}, "--from-audit needs --audit-user"},
		{[]string{"--from=r", "--max-names=-1"}, "--max-names -1: give 0 or more"},
		{[]string{"--from=r", "--name="}, "--name is empty"},
		{[]string{"--from=r", "-o", "wide"}, `--output "wide" is not one of`},
		{[]string{"--from=/nonexistent/r", "--held=false"}, "reading the requests: open /nonexistent/r"},
		{[]string{"--from=r", "--subject=Robot:x", "--held=false"}, `--subject "Robot:x"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			s, out, _ := streams()
			g := &cmdutil.GlobalOptions{Getenv: func(string) string { return "" }}
			cmd := NewCmdLeastPrivilege(g, s)
			cmd.SetArgs(tt.args)
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.Execute()
			assert.ErrorContains(t, err, tt.want)
			assert.Empty(t, out.String(), "nothing printed")
		})
	}
}

// recording writes events of reqs into a file, sealed as record seals
// them, and returns it and the key.
func recording(t *testing.T, reqs ...auditlog.Request) (string, string) {
	var b bytes.Buffer
	for _, r := range reqs {
		line, err := json.Marshal(r.Event(cmp.Or(r.Path, "/a-resource"), "", time.Now()))
		require.NoError(t, err)
		b.Write(append(line, '\n'))
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	sealed, err := auditlog.Seal(b.Bytes(), priv)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	require.NoError(t, os.WriteFile(path, sealed, 0o600))
	return path, auditlog.FormatKey(pub)
}

func TestLeastPrivilegePrints(t *testing.T) {
	file, key := recording(t,
		auditlog.Request{Verb: "get", Path: "/api", Code: 200, Decision: auditlog.Allow},
		auditlog.Request{Verb: "list", Resource: "pods", Namespace: "a", Code: 200, Decision: auditlog.Allow},
		auditlog.Request{Verb: "get", Resource: "pods", Subresource: "exec", Namespace: "a", Name: "web", Code: 101,
			Decision: auditlog.Allow},
		auditlog.Request{Verb: "list", Resource: "secrets", Namespace: "a", Code: 403, Decision: auditlog.Forbid},
		auditlog.Request{Verb: "delete", Resource: "secrets", Namespace: "a", Code: 429},
		auditlog.Request{Verb: "get", Resource: "nodes", Name: "n1", Code: 200, Decision: auditlog.Allow},
	)
	// A line someone else added after the seal: not read.
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, append(b, "not json\n"...), 0o600))
	run := func(args ...string) (string, string) {
		t.Helper()
		s, out, errOut := streams()
		g := &cmdutil.GlobalOptions{Getenv: func(string) string { return "" }}
		cmd := NewCmdLeastPrivilege(g, s)
		cmd.SetArgs(append([]string{"--from", file, "--recording-key", key, "--held=false", "--name=ci"}, args...))
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		require.NoError(t, cmd.Execute())
		return out.String(), errOut.String()
	}

	out, _ := run("--subject=ServiceAccount:a:robot")
	assert.True(t, strings.HasPrefix(out, "# least privilege for 4 cells used (verb, resource, namespace); "+
		"not granted: 1 refused by the cluster, 1 undecided (no answer, or one given before its authorizer "+
		"decided), 1 discovery (every user's)\n"), out)
	assert.Contains(t, out, "# 1 line of "+file+" not read: not sealed by record with the --recording-key given "+
		"(written by someone else, or a recording cut short)")
	assert.Contains(t, out, "# risk: create pods/exec in a: credentials: a path to other identities' credentials: "+
		"it runs commands in pods")
	assert.NotContains(t, out, "creationTimestamp")
	docs := strings.Split(out, "---\n")
	require.Len(t, docs, 4, "ClusterRole, Role, ClusterRoleBinding, RoleBinding")
	var role rbacv1.Role
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[1]), &role))
	assert.Equal(t, "Role", role.Kind)
	assert.Equal(t, "a", role.Namespace)
	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}},
		{APIGroups: []string{""}, Resources: []string{"pods/exec"}, ResourceNames: []string{"web"},
			Verbs: []string{"get", "create"}},
	}, role.Rules)
	var binding rbacv1.RoleBinding
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[3]), &binding))
	assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "a", Name: "robot"}}, binding.Subjects)

	out, _ = run()
	assert.Contains(t, out, "# no bindings: give --subject to bind the roles")
	assert.Len(t, strings.Split(out, "---\n"), 2)

	out, errOut := run("-o", "json")
	var list struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	assert.Equal(t, "List", list.Kind)
	assert.Len(t, list.Items, 2)
	assert.Contains(t, errOut, "kubectl-impersonate: least-privilege: least privilege for 4 cells used")
	out, _ = run("-o", "yaml", "--subject=User:robot")
	var ylist struct {
		APIVersion, Kind string
		Items            []map[string]any
	}
	require.NoError(t, yaml.Unmarshal([]byte(out), &ylist))
	assert.Equal(t, []any{"v1", "List", 4}, []any{ylist.APIVersion, ylist.Kind, len(ylist.Items)}, out)
	assert.NotContains(t, out, "creationTimestamp")

	out, _ = run("-o", "jsonpath={.refused[0].resource} {.used[*].verb}")
	assert.Equal(t, "secrets get list get create", out)
}

// TestSummaryIsCommentLines: every line above the YAML is a comment, and
// nothing there may reach a terminal unescaped, whatever the namespaces
// held in (the cluster answered for them; their names come from a log).
func TestSummaryIsCommentLines(t *testing.T) {
	res := Result{Held: 3, HeldIn: []string{"a\napiVersion: v1\nkind: ClusterRoleBinding\n---\n#", "b\x1b]0;x\a"},
		Policy: rolegen.Policy{Used: []rolegen.Cell{{Namespace: "a", Verb: "get", Resource: "pods"}},
			Escalations: []rolegen.Escalation{{Namespace: "a", Verb: "get", Resource: "secrets",
				Risk: risk.Risk{Kind: "x\n#", Why: "x\ny"}}}}, Skipped: []string{"a\nb"}}
	out := summary(res, "# ")
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		assert.True(t, strings.HasPrefix(l, "# "), "%q", l)
	}
	assert.Equal(t, -1, func() int { i, _ := logging.SafeOutput(out); return i }(), out)
}

// TestRecordRefusesALinkedRecording: -o goes through safefile.OpenAppend
// (its tests under pkg/host/safefile hold the rule on every platform): a
// symbolic link planted at FILE is refused before anything runs, and its
// target gets nothing.
func TestRecordRefusesALinkedRecording(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, ".zshrc")
	require.NoError(t, os.WriteFile(victim, []byte("x"), 0o600))
	link := filepath.Join(dir, "rec.jsonl")
	require.NoError(t, os.Symlink(victim, link))
	s, _, _ := streams()
	o := &RecordOptions{IOStreams: s, File: link, Command: []string{"/nonexistent/cmd"},
		upstream: &rest.Config{Host: "https://127.0.0.1:1"},
		global:   &cmdutil.GlobalOptions{APIServer: linked.Code{}, Environ: func() []string { return nil }}}
	assert.ErrorContains(t, o.Run(context.Background()), "the recording "+link+" is a symbolic link")
	b, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, "x", string(b))
}

// TestRecordStopsTheCommand: stopped (interrupted, hung up, terminated,
// or past --command-timeout: its context ends), record ends the command's
// whole process group within stopGrace and removes its folder.
func TestRecordStopsTheCommand(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("process groups are Unix's")
	}
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer up.Close()
	self, err := os.Executable()
	require.NoError(t, err)
	for _, how := range []string{"cancelled", "deadline"} {
		t.Run(how, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			pids := filepath.Join(t.TempDir(), "pids")
			s, _, errOut := streams()
			o := &RecordOptions{IOStreams: s, File: filepath.Join(t.TempDir(), "rec.jsonl"), Command: []string{self},
				upstream: &rest.Config{Host: up.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}},
				global: &cmdutil.GlobalOptions{APIServer: linked.Code{}, Environ: func() []string {
					return []string{envChild + "=sleep", "KI_TEST_PIDS=" + pids, "PATH=" + os.Getenv("PATH")}
				}}}
			ctx, cancel := context.WithCancel(context.Background())
			if how == "deadline" {
				ctx, cancel = context.WithTimeout(context.Background(), 500*time.Millisecond)
			}
			defer cancel()
			go func() {
				for range 100 { // bounded: 10 s
					if _, err := os.Stat(pids); err == nil {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
				if how == "cancelled" {
					cancel()
				}
			}()
			start := time.Now()
			err := o.Run(ctx)
			assert.Error(t, err, "the command did not end by itself")
			assert.Less(t, time.Since(start), 10*time.Second, errOut.String())
			b, err := os.ReadFile(pids)
			require.NoError(t, err, "the command ran")
			var child, grand int
			_, err = fmt.Sscan(string(b), &child, &grand)
			require.NoError(t, err)
			assert.Eventually(t, func() bool { return !alive(grand) }, 3*time.Second, 50*time.Millisecond,
				"the command's own child was stopped with it")
			left, err := filepath.Glob(filepath.Join(tmp, "kubectl-impersonate-record-*"))
			require.NoError(t, err)
			assert.Empty(t, left, "the command's folder is removed")
		})
	}
}

// TestRecordingForgedByTheCommand: the command recorded runs as the same
// user and appends an event of its own ("create clusterrolebindings",
// allowed) to the recording while it runs (the attacker's review of issue
// 56). record keeps its events in memory and seals them once the command
// has ended: the forged line is outside the seal, and least-privilege
// reads nothing of it, with or without the key; a whole file forged with
// another key is refused under the key record printed.
func TestRecordingForgedByTheCommand(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("sh")
	}
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer up.Close()
	file := filepath.Join(t.TempDir(), "recording.jsonl")
	forged := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"f",` +
		`"stage":"ResponseComplete","verb":"create","user":{},"objectRef":{"resource":"clusterrolebindings",` +
		`"apiGroup":"rbac.authorization.k8s.io"},"responseStatus":{"code":201},` +
		`"annotations":{"authorization.k8s.io/decision":"allow"}}`
	s, _, errOut := streams()
	o := &RecordOptions{IOStreams: s, File: file,
		Command:  []string{"/bin/sh", "-c", `printf '%s\n' "$FORGED" >> "$RECORDING"`},
		upstream: &rest.Config{Host: up.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}},
		global: &cmdutil.GlobalOptions{APIServer: linked.Code{}, Environ: func() []string {
			return []string{"FORGED=" + forged, "RECORDING=" + file, "PATH=" + os.Getenv("PATH")}
		}}}
	require.NoError(t, o.Run(context.Background()), errOut.String())
	key := regexp.MustCompile(`--recording-key (ed25519:\S+)`).FindStringSubmatch(errOut.String())
	require.Len(t, key, 2, errOut.String())
	run := func(args ...string) string {
		t.Helper()
		s, out, _ := streams()
		cmd := NewCmdLeastPrivilege(&cmdutil.GlobalOptions{Getenv: func(string) string { return "" }}, s)
		cmd.SetArgs(append([]string{"--from", file, "--held=false"}, args...))
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		require.NoError(t, cmd.Execute())
		return out.String()
	}
	for _, args := range [][]string{nil, {"--recording-key", key[1]}} {
		out := run(args...)
		assert.NotContains(t, out, "clusterrolebindings", "%v: the forged line is granted", args)
		assert.Contains(t, out, "# 1 line of "+file+" not read: not sealed by record", "%v", args)
	}
	// The whole file rewritten, sealed with the attacker's own key.
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	sealed, err := auditlog.Seal([]byte(forged+"\n"), priv)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, sealed, 0o600))
	out := run()
	assert.Contains(t, out, "clusterrolebindings", "without the key, any seal is read, and said")
	assert.Contains(t, out, "not checked against the key record printed")
	out = run("--recording-key", key[1])
	assert.NotContains(t, out, "clusterrolebindings", "the key record printed refuses another key's seal")
	assert.Contains(t, out, "not by a --recording-key given")
}
