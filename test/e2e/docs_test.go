//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/doctest"
	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testkit"
)

// docReader is a person who pastes the docs into a shell: a fresh HOME,
// kubectl and kubectl-impersonate on PATH (xdg-open is the headless
// browser), the provider's CA trusted by the system (SSL_CERT_FILE: the
// docs' provider has a public certificate), and a kubeconfig with the
// contexts the docs name, for an API server configured as docs/dex.md
// says. What the reader would type differently is in docSubstitutions.
type docReader struct {
	t     *testing.T
	home  string
	env   []string
	subs  []docSubstitution
	api   *apiserver
	proxy int
}

type docSubstitution struct {
	re   *regexp.Regexp
	with string
}

// docSubstitutions: the docs' example provider's URL is the stack's Dex
// (whose clients include docs/dex.md's, under the docs' names: client IDs
// and audiences are not substituted), the proxy's address a loopback port.
func docSubstitutions(proxyPort int) []docSubstitution {
	return []docSubstitution{
		{regexp.MustCompile(`https://dex\.example\.com`), st.issuer},
		{regexp.MustCompile(`--listen=:8443`), fmt.Sprintf("--listen=127.0.0.1:%d", proxyPort)},
		{regexp.MustCompile(`https://k8s-proxy\.example\.com:8443`), fmt.Sprintf("https://127.0.0.1:%d", proxyPort)},
	}
}

func (r *docReader) substitute(s string) string {
	for _, sub := range r.subs {
		s = sub.re.ReplaceAllString(s, sub.with)
	}
	return s
}

// docGroup is docs a reader follows in order against one cluster,
// configured as one of them says.
type docGroup struct {
	docs []string
	// apiFlags configure the group's kube-apiserver from what the doc shows.
	apiFlags func(t *testing.T, r *docReader) []string
	// username is the name the API server gives alice (the reader).
	username string
	// prelude: the first lines of another doc the reader ran before.
	prelude     string
	preludeRuns int
}

var docGroups = []docGroup{
	{
		docs:     []string{"README.md", "docs/getting-started.md", "docs/dex.md", "docs/inspection.md", "docs/proxy.md"},
		apiFlags: legacyFlagsOf("docs/dex.md"),
		username: "alice@example.com",
	},
	{
		docs:     []string{"docs/apiserver-authentication.md"},
		apiFlags: authConfigOf("docs/apiserver-authentication.md"),
		username: "oidc:alice@example.com",
		// getting-started's setup and first kubectl call.
		prelude: "docs/getting-started.md", preludeRuns: 2,
	},
}

// legacyFlagsOf are the kube-apiserver flags (a text block) doc shows.
func legacyFlagsOf(doc string) func(t *testing.T, r *docReader) []string {
	return func(t *testing.T, r *docReader) []string {
		blocks, err := doctest.Blocks(filepath.Join("../..", doc))
		require.NoError(t, err)
		for _, b := range blocks {
			if b.Lang != "text" {
				continue
			}
			lines, _ := b.Lines()
			var flags []string
			for _, l := range lines {
				flags = append(flags, doctest.Fields(r.substitute(l.Text))...)
			}
			// The stack's Dex has a private CA.
			return append(flags, "--oidc-ca-file="+st.caFile)
		}
		t.Fatalf("%s shows no kube-apiserver flags", doc)
		return nil
	}
}

// authConfigOf runs kube-apiserver with the AuthenticationConfiguration
// doc shows (the stack's CA where it elides one), which is also the
// reader's auth-config.yaml.
func authConfigOf(doc string) func(t *testing.T, r *docReader) []string {
	return func(t *testing.T, r *docReader) []string {
		blocks, err := doctest.Blocks(filepath.Join("../..", doc))
		require.NoError(t, err)
		for _, b := range blocks {
			if b.Lang == "yaml" && strings.Contains(b.Body, "kind: AuthenticationConfiguration") {
				path := filepath.Join(r.home, "auth-config.yaml")
				require.NoError(t, os.WriteFile(path, []byte(doctest.WithCA(r.substitute(b.Body), st.caPEM)), 0o600))
				return []string{"--authentication-config=" + path}
			}
		}
		t.Fatalf("%s shows no AuthenticationConfiguration", doc)
		return nil
	}
}

func newDocReader(t *testing.T, name string, g docGroup) *docReader {
	home := t.TempDir()
	proxyPort, err := testkit.FreePort()
	require.NoError(t, err)
	r := &docReader{t: t, home: home, proxy: proxyPort, subs: docSubstitutions(proxyPort)}
	bin := filepath.Join(home, "bin")
	require.NoError(t, os.MkdirAll(bin, 0o700))
	for name, target := range map[string]string{"kubectl": st.kubectl, "kubectl-impersonate": st.ki, "xdg-open": st.browser} {
		require.NoError(t, os.Symlink(target, filepath.Join(bin, name)))
	}
	u := users["alice"]
	// The reader is at a desktop: a display (xdg-open above is its
	// browser), so --grant-type auto is the browser flow.
	r.env = append(baseEnv(home), "PATH="+bin+":"+os.Getenv("PATH"), "SSL_CERT_FILE="+st.caFile, "DISPLAY=:0",
		"E2E_USER="+u.email, "E2E_PASSWORD="+u.password,
		"E2E_BROWSER_LOG="+filepath.Join(st.logs, "TestDocsOnTheStack-"+name+"-browser.log"))

	// The reader's API server, as the doc configures it.
	api, cmd, err := st.startAPIServer(name, g.apiFlags(t, r))
	require.NoError(t, err)
	t.Cleanup(func() { st.stopCmd(cmd) })
	require.NoError(t, waitHTTP(api.url+"/readyz", http.Header{"Authorization": {"Bearer " + adminToken}}, 120*time.Second, st.tlsClient()))
	r.api = api
	admin, err := st.adminKubeconfig(api)
	require.NoError(t, err)
	// The reader administers this cluster; the proxy's own credential may
	// only impersonate; the objects docs/inspection.md lists.
	kubectlApply(t, admin, `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: docs-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: "`+g.username+`"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: impersonator}
rules:
- {apiGroups: [""], resources: [users, groups], verbs: [impersonate]}
- {apiGroups: [authentication.k8s.io], resources: [uids, userextras/scopes], verbs: [impersonate]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: proxy-impersonates}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: impersonator}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: e2e-proxy}]
---
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
`)
	projectConfigMaps(t, admin)
	projectWidgets(t, admin)

	// The reader's kubeconfig: the contexts the docs name, all for this
	// cluster, with no user yet.
	var kc strings.Builder
	fmt.Fprintf(&kc, "apiVersion: v1\nkind: Config\nclusters:\n- name: docs\n  cluster: {server: %q, certificate-authority: %q}\nusers:\n- name: nobody\n  user: {}\ncontexts:\n", api.url, st.caFile)
	for _, c := range []string{"prod", "my-cluster"} {
		fmt.Fprintf(&kc, "- name: %s\n  context: {cluster: docs, user: nobody}\n", c)
	}
	kc.WriteString("current-context: prod\n")
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".kube"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".kube", "config"), []byte(kc.String()), 0o600))
	// The proxy's files (docs/proxy.md): its serving certificate, the CA
	// users trust it with, and its own credential for the API server.
	copyFile(t, st.certFile, filepath.Join(home, "tls.crt"))
	copyFile(t, st.keyFile, filepath.Join(home, "tls.key"))
	copyFile(t, st.caFile, filepath.Join(home, "proxy-ca.crt"))
	writeUpstreamKubeconfig(t, filepath.Join(home, "proxy.kubeconfig"), api, proxyToken)
	require.Equal(t, 0, run(t, r.env, false, st.ki, "logout", "--all").code)
	return r
}

func copyFile(t *testing.T, from, to string) {
	b, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, b, 0o600))
}

// startProxy runs the doc's proxy line in the background until the test ends.
func (r *docReader) startProxy(line string) error {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "bash", "-c", "cd "+r.home+" && exec "+line)
	cmd.Env = r.env
	logf, err := os.Create(filepath.Join(st.logs, "TestDocsOnTheStack-proxy.log"))
	if err != nil {
		cancel()
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		cancel()
		return err
	}
	r.t.Cleanup(func() { cancel(); _ = cmd.Wait(); _ = logf.Close() })
	return waitHTTP(fmt.Sprintf("https://127.0.0.1:%d/readyz", r.proxy), nil, 30*time.Second, st.tlsClient())
}

var age = regexp.MustCompile(`^\d+[smhd]$`)

// withoutAges drops AGE columns, which differ from run to run.
func withoutAges(line string) string {
	var out []string
	for _, f := range strings.Fields(line) {
		if !age.MatchString(f) {
			out = append(out, f)
		}
	}
	return strings.Join(out, " ")
}

// TestDocsOnTheStack runs every shell line of doctest.StackDocs in order,
// as a reader going through them (one reader per docGroup): each must
// exit 0, and each output a console block shows must be there (AGE aside;
// "..." elides rows). The unit doc test (test/integration TestDocs) leaves these
// lines to this test.
func TestDocsOnTheStack(t *testing.T) {
	// What the docs show is the tool's behavior, which the first version
	// proves: the oldest one's stack would only run it twice (46 s).
	onFirstVersionOnly(t)
	var covered []string
	ran := 0
	for i, g := range docGroups {
		covered = append(covered, g.docs...)
		t.Run(g.docs[0], func(t *testing.T) {
			r := newDocReader(t, fmt.Sprintf("docs-%d", i), g)
			if g.prelude != "" {
				lines := docLines(t, g.prelude)
				require.GreaterOrEqual(t, len(lines), g.preludeRuns)
				for _, l := range lines[:g.preludeRuns] {
					r.runLine(l.Where+" (prelude)", r.substitute(l.Text), l.Output)
				}
			}
			for _, doc := range g.docs {
				for _, l := range docLines(t, doc) {
					ran++
					r.runLine(l.Where, r.substitute(l.Text), l.Output)
				}
			}
		})
	}
	assert.ElementsMatch(t, doctest.StackDocs, covered, "every doc the unit test leaves to the stack runs here")
	t.Logf("%d lines of %d docs ran on the stack", ran, len(covered))
	assert.Greater(t, ran, 10)
}

// docLines are the lines of doc's shell blocks a reader runs here: not
// opted out, not make (test/integration's TestDocs runs make install; CI runs make).
func docLines(t *testing.T, doc string) []doctest.Line {
	blocks, err := doctest.Blocks(filepath.Join("../..", doc))
	require.NoError(t, err)
	var out []doctest.Line
	for _, b := range blocks {
		if !b.Shell() || b.Skip != "" {
			continue
		}
		lines, problems := b.Lines()
		require.Empty(t, problems)
		for _, l := range lines {
			if l.Words[0] != "make" {
				out = append(out, l)
			}
		}
	}
	return out
}

// runLine runs one line in bash on a terminal, in HOME; a proxy line
// runs in the background. want is what a console block shows.
func (r *docReader) runLine(where, line string, want []string) {
	t := r.t
	if args, ok := doctest.Plugin(doctest.Fields(line)); ok && len(args) > 0 && args[0] == "proxy" {
		assert.NoError(t, r.startProxy(line), "%s: %s (log: TestDocsOnTheStack-proxy.log)", where, line)
		return
	}
	res := run(t, r.env, true, "bash", "-c", "cd "+r.home+" && "+line)
	if !assert.Equal(t, 0, res.code, "%s: %s\nstdout: %s\nstderr: %s", where, line, res.stdout, res.stderr) {
		return
	}
	got := map[string]bool{}
	for _, out := range strings.Split(res.stdout+res.stderr, "\n") {
		got[withoutAges(out)] = true
	}
	for _, w := range want {
		if strings.TrimSpace(w) == "..." {
			continue
		}
		assert.True(t, got[withoutAges(w)], "%s: %s: the doc shows %q; the output was:\n%s%s", where, line, w, res.stdout, res.stderr)
	}
}
