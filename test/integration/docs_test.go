package integration

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	kubectlconfig "k8s.io/kubectl/pkg/config"
	kubectlscheme "k8s.io/kubectl/pkg/config/scheme"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/doctest"
	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testissuer"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/install"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/authn"
)

// The doc tests take every fenced block of README.md and docs/*.md as a
// reader would paste it: shell commands are parsed with the real command
// tree and the offline-safe ones run with the built binary in a fresh
// HOME; the rest run on the real stack (test/e2e TestDocsOnTheStack, for
// doctest.StackDocs); each YAML block is validated by the code that
// would read it. A block that fits none of these fails the test unless
// it opts out with a marker, and the opt-outs are counted.

const docRoot = "../../"

// parseDocCommand parses one command with the real command tree.
func parseDocCommand(args []string) error {
	root := cmd.NewRootCmd(genericiooptions.NewTestIOStreamsDiscard())
	c, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if c == root && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("unknown command %q", args[0])
	}
	return c.ParseFlags(rest)
}

// TestDocCommandsCatch: the checker finds the traps it is for.
func TestDocCommandsCatch(t *testing.T) {
	file := filepath.Join(t.TempDir(), "doc.md")
	require.NoError(t, os.WriteFile(file, []byte("```sh\n"+
		"kubectl-impersonate proxy --upstream-kubeconfig=p.kubeconfig \\        # or --in-cluster\n"+
		"  --oidc-issuer-url=https://x\n"+
		"kubectl impersonate whoami --no-such-flag\n"+
		"kubectl impersonate no-such-command\n"+
		"kubectl impersonate login --authentication-timeout=soon\n"+
		"```\n"+
		"<!-- doctest: skip: needs a real cloud -->\n"+
		"```console\n"+
		"$ kubectl impersonate version   # a comment\n"+
		"v1.2.3\n"+
		"```\n"), 0o600))
	blocks, err := doctest.Blocks(file)
	require.NoError(t, err)
	require.Len(t, blocks, 2)
	lines, problems := blocks[0].Lines()
	require.Len(t, problems, 1)
	assert.Contains(t, problems[0], "does not continue the line")
	require.Len(t, lines, 4, "the trapped line ends its command: the next line is a command of its own")
	for _, l := range lines[1:] {
		args, ok := doctest.Plugin(l.Words)
		require.True(t, ok)
		assert.Error(t, parseDocCommand(args), "%v", args)
	}
	assert.Equal(t, "needs a real cloud", blocks[1].Skip)
	console, _ := blocks[1].Lines()
	require.Len(t, console, 1)
	assert.Equal(t, []string{"kubectl", "impersonate", "version"}, console[0].Words)
	assert.Equal(t, []string{"v1.2.3"}, console[0].Output)
}

// offlineCommands run without a cluster or a provider: they run here.
// claims runs on a minted token (it reads the signing keys of a local
// issuer that stands in for the docs' issuer); with --compare it asks
// the API server, so it runs on the stack.
var offlineCommands = []string{"version", "setup", "logout", "claims", "help", "completion"}

func offline(args []string) bool {
	if len(args) == 0 || slices.Contains(args, "--help") || slices.Contains(args, "-h") {
		return true
	}
	return slices.Contains(offlineCommands, args[0]) && !slices.Contains(args, "--compare")
}

// docTally is what the doc test did, by kind.
type docTally struct {
	blocks, parsed, ran, onStack, validated, makeTargets int
	skipped                                              []string
}

// TestDocs checks every block of README.md and docs/*.md.
func TestDocs(t *testing.T) {
	files, err := doctest.Files(docRoot)
	require.NoError(t, err)
	var tally docTally
	contexts := docContexts(t, files)
	for _, file := range files {
		blocks, err := doctest.Blocks(file)
		require.NoError(t, err)
		rel, _ := filepath.Rel(docRoot, file)
		stack := slices.Contains(doctest.StackDocs, rel)
		w := newDocWorld(t, file, blocks, contexts)
		for _, b := range blocks {
			tally.blocks++
			if b.Skip != "" {
				// Not run, but its commands still parse.
				tally.skipped = append(tally.skipped, b.Where()+": "+b.Skip)
				for _, l := range blockLines(t, b) {
					if args, ok := doctest.Plugin(l.Words); ok {
						parsePlugin(t, &tally, l.Where, args)
					}
				}
				continue
			}
			switch {
			case b.Shell():
				w.shell(&tally, b, stack)
			case b.Lang == "yaml" || b.Lang == "yml":
				tally.validated += validateYAML(t, b, w)
			case b.Lang == "text" && apiserverFlags(b):
				// kube-apiserver's legacy --oidc-* flags: claims takes
				// them under the same names.
				tally.validated++
				args := []string{"claims"}
				lines, _ := b.Lines()
				for _, l := range lines {
					args = append(args, l.Words...)
				}
				assert.NoError(t, parseDocCommand(args), "%s: kube-apiserver's flags as claims takes them", b.Where())
			default:
				t.Errorf("%s: a %q block the doc test does not know: check it here or mark it <!-- doctest: skip: REASON -->", b.Where(), b.Lang)
			}
		}
	}
	t.Logf("%d blocks: %d commands parsed, %d lines run here, %d lines left to the stack (TestDocsOnTheStack), %d configuration snippets validated, %d make targets checked, %d opted out:\n%s",
		tally.blocks, tally.parsed, tally.ran, tally.onStack, tally.validated, tally.makeTargets, len(tally.skipped), strings.Join(tally.skipped, "\n"))
	assert.Greater(t, tally.parsed, 30, "the docs' commands were found")
	assert.Greater(t, tally.ran, 20, "the offline commands ran")
	assert.Greater(t, tally.validated, 10, "the YAML blocks were validated")
}

var contextFlag = regexp.MustCompile(`--context[= ]([A-Za-z0-9._-]+)`)

// docContexts are the kubeconfig contexts the docs name: the reader's
// existing ones, so the fresh HOME's kubeconfig has them all.
func docContexts(t *testing.T, files []string) []string {
	seen := map[string]bool{}
	for _, file := range files {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		for _, m := range contextFlag.FindAllStringSubmatch(string(b), -1) {
			seen[m[1]] = true
		}
	}
	var out []string
	for c := range seen {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// docWorld is a reader's machine: a fresh HOME whose kubeconfig has the
// contexts the docs name, the profiles file the doc shows (else
// docs/profiles.md's), and the working directory for relative paths.
type docWorld struct {
	t      *testing.T
	file   string
	blocks []doctest.Block // the doc's
	home   string
	env    []string
	issuer *testissuer.Issuer
	caFile string
	// authConfig is the doc's AuthenticationConfiguration, pointed at the
	// local issuer, as auth-config.yaml in the working directory.
	authConfig string
}

func newDocWorld(t *testing.T, file string, blocks []doctest.Block, contexts []string) *docWorld {
	home := t.TempDir()
	w := &docWorld{t: t, file: file, blocks: blocks, home: home, env: []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"),
		// No D-Bus: the keyring is e2e's business; auto falls back to disk.
		"DBUS_SESSION_BUS_ADDRESS=", "XDG_RUNTIME_DIR=" + home,
	}}
	var kc strings.Builder
	kc.WriteString("apiVersion: v1\nkind: Config\nclusters:\n- name: docs\n  cluster: {server: \"https://127.0.0.1:1\"}\ncontexts:\n")
	for _, c := range contexts {
		fmt.Fprintf(&kc, "- name: %s\n  context: {cluster: docs, user: nobody}\n", c)
	}
	fmt.Fprintf(&kc, "users:\n- name: nobody\n  user: {token: not-a-token}\ncurrent-context: %s\n", contexts[0])
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".kube"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".kube", "config"), []byte(kc.String()), 0o600))
	profiles := profileBlock(blocks)
	if profiles == "" {
		own, err := doctest.Blocks(filepath.Join(docRoot, "docs", "profiles.md"))
		require.NoError(t, err)
		profiles = profileBlock(own)
	}
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".config", "kubectl-impersonate"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".config", "kubectl-impersonate", "config.yaml"), []byte(profiles), 0o600))
	w.readerFiles()
	if ac := w.docAuthConfig(); ac != "" {
		// The cluster's configuration as the doc shows it, for the
		// commands that take the file (claims replaces it: localIssuer).
		require.NoError(t, os.WriteFile(filepath.Join(home, "auth-config.yaml"), []byte(doctest.WithCA(ac, someCA())), 0o600))
	}
	return w
}

var (
	secretPath = regexp.MustCompile(`~/\.config/kubectl-impersonate/[\w.-]+\.secret`)
	caPath     = regexp.MustCompile(`certificate-authority=([\w.-]+\.crt)`)
)

// readerFiles are what the docs assume the reader has: their client
// secrets ($SECRET too) and their proxy's CA. A file a line of the doc
// creates is left for that line.
func (w *docWorld) readerFiles() {
	w.env = append(w.env, "SECRET=the-reader's-client-secret")
	var text strings.Builder
	for _, b := range w.blocks {
		text.WriteString(b.Body)
	}
	body := text.String()
	for _, p := range secretPath.FindAllString(body, -1) {
		if strings.Contains(body, "> "+p) {
			continue
		}
		require.NoError(w.t, os.WriteFile(filepath.Join(w.home, p[2:]), []byte("the-reader's-client-secret\n"), 0o600))
	}
	for _, m := range caPath.FindAllStringSubmatch(body, -1) {
		require.NoError(w.t, os.WriteFile(filepath.Join(w.home, m[1]), someCA(), 0o600))
	}
}

func profileBlock(blocks []doctest.Block) string {
	for _, b := range blocks {
		if b.Lang == "yaml" && strings.HasPrefix(b.Body, "profiles:") {
			return b.Body
		}
	}
	return ""
}

// localIssuer starts the issuer that stands in for the docs' (once per
// world) and writes the doc's AuthenticationConfiguration for it.
func (w *docWorld) localIssuer(authConfig string) {
	if w.issuer != nil {
		return
	}
	is, err := testissuer.Start()
	require.NoError(w.t, err)
	w.t.Cleanup(is.Close)
	w.issuer = is
	w.caFile = filepath.Join(w.home, "issuer-ca.crt")
	require.NoError(w.t, os.WriteFile(w.caFile, is.CAPEM(), 0o600))
	if authConfig != "" {
		doc := doctest.WithCA(authConfig, is.CAPEM())
		doc = strings.ReplaceAll(doc, "https://dex.example.com", is.URL)
		w.authConfig = filepath.Join(w.home, "auth-config.yaml")
		require.NoError(w.t, os.WriteFile(w.authConfig, []byte(doc), 0o600))
	}
}

// blockLines are the commands of a shell block; its traps are errors.
func blockLines(t *testing.T, b doctest.Block) []doctest.Line {
	lines, problems := b.Lines()
	for _, p := range problems {
		t.Error(p)
	}
	return lines
}

// parsePlugin parses a kubectl-impersonate command with the command tree;
// false when it does not parse.
func parsePlugin(t *testing.T, tally *docTally, where string, args []string) bool {
	tally.parsed++
	if err := parseDocCommand(args); err != nil {
		t.Errorf("%s: kubectl impersonate %s: %v", where, strings.Join(args, " "), err)
		return false
	}
	return true
}

// harmless are the shell commands the unit doc test runs (in the
// temporary HOME).
var harmless = []string{"umask", "printf", "mkdir", "chmod"}

// shell runs or defers each command of a shell block.
func (w *docWorld) shell(tally *docTally, b doctest.Block, stack bool) {
	t := w.t
	for _, l := range blockLines(t, b) {
		if args, ok := doctest.Plugin(l.Words); ok {
			if !parsePlugin(t, tally, l.Where, args) {
				continue
			}
			if offline(args) {
				tally.ran++
				w.runPlugin(l, args)
				continue
			}
		}
		switch {
		case l.Words[0] == "make":
			tally.makeTargets++
			for _, target := range l.Words[1:] {
				if !strings.Contains(target, "=") { // VAR=value sets a variable
					checkMakeTarget(t, l.Where, target)
				}
			}
			if slices.Equal(l.Words, []string{"make", "install"}) && !madeInstall {
				// The README's set-up command, into a GOBIN of the reader's
				// (once: README and getting-started show the same).
				madeInstall = true
				tally.ran++
				w.makeInstall(l)
			}
			continue
		case l.Words[0] == "export":
			tally.ran++
			w.env = append(w.env, l.Words[1:]...)
			continue
		case l.Words[0] != "kubectl" && !strings.HasSuffix(l.Words[0], "kubectl-impersonate"):
			// Only commands that touch nothing but the temporary HOME run
			// here: a doc line that installs or downloads must not run in
			// go test.
			if !slices.Contains(harmless, strings.TrimLeft(l.Words[0], "(")) {
				t.Errorf("%s: %q: the unit doc test runs only %v; run it on the stack (doctest.StackDocs) or mark the block <!-- doctest: skip: REASON -->", l.Where, l.Text, harmless)
				continue
			}
			tally.ran++
			r := w.run("bash", "-c", l.Text)
			assert.Equal(t, 0, r.code, "%s: %s: %s", l.Where, l.Text, r.stderr)
			continue
		}
		if !stack {
			t.Errorf("%s: %q needs a cluster or a provider and %s is not among doctest.StackDocs: run it there, or mark the block <!-- doctest: skip: REASON -->", l.Where, l.Text, b.File)
			continue
		}
		tally.onStack++
	}
}

// runPlugin runs one offline command with the built binary and checks
// what it claims to have done.
func (w *docWorld) runPlugin(l doctest.Line, args []string) {
	t := w.t
	args = slices.Clone(args)
	if args[0] == "claims" {
		// A token minted by the local issuer, which stands in for the
		// doc's issuer (its URL replaced), for the claims the doc maps.
		w.localIssuer(w.docAuthConfig())
		for i, a := range args {
			args[i] = strings.ReplaceAll(a, "https://dex.example.com", w.issuer.URL)
			if a == "--authentication-config=auth-config.yaml" {
				require.NotEmpty(t, w.authConfig, "%s: the doc shows no AuthenticationConfiguration for auth-config.yaml", l.Where)
				args[i] = "--authentication-config=" + w.authConfig
			}
		}
		tok, err := w.issuer.Mint(w.issuer.Claims("alice-sub", "kubernetes", time.Hour, map[string]any{
			"email": "alice@example.com", "email_verified": true, "groups": []string{"developers"}}), testissuer.Valid)
		require.NoError(t, err)
		tokFile := filepath.Join(w.home, "token.jwt")
		require.NoError(t, os.WriteFile(tokFile, []byte(tok), 0o600))
		args = append(args, "--token-file="+tokFile)
		if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--authentication-config=") }) {
			// The doc's issuer has a public CA; the local one has this.
			args = append(args, "--oidc-certificate-authority="+w.caFile)
		}
	}
	r := w.run(append([]string{binary}, args...)...)
	if !assert.Equal(t, 0, r.code, "%s: kubectl impersonate %s\n%s", l.Where, strings.Join(args, " "), r.stderr) {
		return
	}
	switch {
	case args[0] == "claims":
		assert.Contains(t, r.stdout, "oidc:alice@example.com", "%s: the username the doc's mapping gives", l.Where)
		assert.Contains(t, r.stdout, "oidc:developers", "%s: the groups the doc's mapping gives", l.Where)
	case args[0] == "setup" && slices.Contains(args, "--write"):
		w.checkWritten(l, args)
	case args[0] == "version":
		assert.NotEmpty(t, strings.TrimSpace(r.stdout), l.Where)
	}
}

// checkWritten: the user entry setup --write names exists, runs this
// plugin, and the context uses it.
func (w *docWorld) checkWritten(l doctest.Line, args []string) {
	t := w.t
	flag := func(name string) string {
		for _, a := range args {
			if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
				return v
			}
		}
		return ""
	}
	cfg, err := clientcmd.LoadFromFile(filepath.Join(w.home, ".kube", "config"))
	require.NoError(t, err)
	user := cfg.AuthInfos[flag("user")]
	if !assert.NotNil(t, user, "%s: setup --write wrote the user %q", l.Where, flag("user")) || !assert.NotNil(t, user.Exec, l.Where) {
		return
	}
	assert.Equal(t, fastBinary, user.Exec.Command, "%s: the exec entry runs the fast get-token binary", l.Where)
	if ctx := flag("context"); ctx != "" {
		require.Contains(t, cfg.Contexts, ctx, l.Where)
		assert.Equal(t, flag("user"), cfg.Contexts[ctx].AuthInfo, "%s: the context uses the user", l.Where)
	}
	assert.NoError(t, clientcmd.Validate(*cfg), "%s: the kubeconfig written validates", l.Where)
}

// docAuthConfig is the AuthenticationConfiguration the doc shows, "" if none.
func (w *docWorld) docAuthConfig() string {
	for _, b := range w.blocks {
		if strings.Contains(b.Body, "kind: AuthenticationConfiguration") {
			return strings.Split(b.Body, "\n---\n")[0]
		}
	}
	return ""
}

func (w *docWorld) run(argv ...string) result { return w.runEnv(nil, argv...) }

func (w *docWorld) runEnv(extraEnv []string, argv ...string) result {
	return w.runTimeout(30*time.Second, extraEnv, argv...)
}

func (w *docWorld) runTimeout(timeout time.Duration, extraEnv []string, argv ...string) result {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.Env, c.Dir = append(slices.Clone(w.env), extraEnv...), w.home
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		r.code, r.stderr = -1, err.Error()
	}
	return r
}

// madeInstall: make install ran in this test process.
var madeInstall bool

// makeInstall runs make install as the README says, into a fresh GOBIN
// on PATH: both binaries land there and the plugin runs.
func (w *docWorld) makeInstall(l doctest.Line) {
	gobin := filepath.Join(w.home, "go", "bin")
	// A release build (-trimpath, no cgo) shares no compiled package with
	// the test builds: from a cold cache it compiles everything.
	r := w.runTimeout(10*time.Minute, []string{"GOBIN=" + gobin, "PATH=" + gobin + ":" + os.Getenv("PATH"),
		"GOCACHE=" + goEnv(w.t, "GOCACHE"), "GOMODCACHE=" + goEnv(w.t, "GOMODCACHE"), "GOPATH=" + filepath.Join(w.home, "go")},
		"make", "-C", filepath.Join(mustAbs(w.t, docRoot)), "install")
	if !assert.Equal(w.t, 0, r.code, "%s: make install: %s%s", l.Where, r.stdout, r.stderr) {
		return
	}
	assert.Contains(w.t, r.stdout, "kubectl-impersonate", "%s: make install runs version", l.Where)
	assert.Contains(w.t, r.stdout, "Installed in "+gobin+": run", "%s: on PATH", l.Where)
	for _, b := range install.Names() {
		assert.FileExists(w.t, filepath.Join(gobin, b), l.Where)
	}
}

func goEnv(t *testing.T, name string) string {
	out, err := exec.Command("go", "env", name).Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}

func mustAbs(t *testing.T, p string) string {
	abs, err := filepath.Abs(p)
	require.NoError(t, err)
	return abs
}

var makeRule = regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):`)

// checkMakeTarget: the Makefile has the target the docs name.
func checkMakeTarget(t *testing.T, where, target string) {
	b, err := os.ReadFile(filepath.Join(docRoot, "Makefile"))
	require.NoError(t, err)
	for _, m := range makeRule.FindAllStringSubmatch(string(b), -1) {
		if m[1] == target {
			return
		}
	}
	t.Errorf("%s: make %s: the Makefile has no such target", where, target)
}

// someCA is a real certificate, for the places the docs abbreviate one.
var someCA = sync.OnceValue(func() []byte {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
})

// apiserverFlags tells whether a text block lists kube-apiserver flags.
func apiserverFlags(b doctest.Block) bool {
	lines, _ := b.Lines()
	for _, l := range lines {
		if !strings.HasPrefix(l.Text, "--oidc-") {
			return false
		}
	}
	return len(lines) > 0
}

// validateYAML checks a YAML block with the code that reads it, and
// returns the number of documents it checked.
func validateYAML(t *testing.T, b doctest.Block, w *docWorld) (n int) {
	for _, doc := range strings.Split(b.Body, "\n---\n") {
		switch {
		case strings.Contains(doc, "kind: AuthenticationConfiguration"):
			_, err := authn.LoadConfig([]byte(doctest.WithCA(doc, someCA())))
			assert.NoError(t, err, "%s: kube-apiserver would refuse this AuthenticationConfiguration", b.Where())
		case strings.HasPrefix(strings.TrimLeft(stripYAMLComments(doc), "\n"), "jwt:"):
			// A part of one: what the doc shows under jwt:.
			_, err := authn.LoadConfig([]byte("apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\n" + doc))
			assert.NoError(t, err, "%s: kube-apiserver would refuse this AuthenticationConfiguration", b.Where())
		case strings.Contains(doc, "kind: ClusterRoleBinding"):
			var crb rbacv1.ClusterRoleBinding
			assert.NoError(t, yaml.UnmarshalStrict([]byte(doc), &crb), "%s: a ClusterRoleBinding", b.Where())
			assert.Equal(t, "rbac.authorization.k8s.io/v1", crb.APIVersion, b.Where())
			assert.NotEmpty(t, crb.Subjects, b.Where())
		case strings.Contains(doc, "kind: Preference"):
			obj, _, err := kubectlscheme.StrictCodecs.UniversalDecoder().Decode([]byte(doc), nil, nil)
			if assert.NoError(t, err, "%s: kubectl decodes the kuberc strictly", b.Where()) {
				assert.IsType(t, &kubectlconfig.Preference{}, obj, b.Where())
			}
		case strings.HasPrefix(doc, "users:"):
			// A part of a kubeconfig: strictly kubeconfig v1, and valid
			// as client-go validates it before running an exec plugin.
			full := "apiVersion: v1\nkind: Config\n" + doc
			var v1 clientcmdv1.Config
			assert.NoError(t, yaml.UnmarshalStrict([]byte(full), &v1), "%s: a kubeconfig", b.Where())
			cfg, err := clientcmd.Load([]byte(full))
			if assert.NoError(t, err, b.Where()) {
				assert.NoError(t, clientcmd.Validate(*cfg), "%s: client-go validates the kubeconfig", b.Where())
			}
		case strings.HasPrefix(doc, "profiles:"):
			validateProfiles(t, b, doc, w)
		case strings.Contains(doc, "staticClients:"):
			// Dex's configuration: test/e2e's Dex starts with these
			// clients (TestMain reads them from the doc).
			assert.True(t, slices.Contains(doctest.StackDocs, relDoc(b.File)), "%s: Dex's configuration is run by the e2e stack only for doctest.StackDocs", b.Where())
		default:
			t.Errorf("%s: a YAML block the doc test does not know: validate it here or mark it <!-- doctest: skip: REASON -->", b.Where())
			continue
		}
		n++
	}
	return n
}

func relDoc(file string) string {
	rel, _ := filepath.Rel(docRoot, file)
	return rel
}

func stripYAMLComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// validateProfiles loads each profile of the snippet with the profile
// loader and get-token's validation, as setup --profile does.
func validateProfiles(t *testing.T, b doctest.Block, doc string, w *docWorld) {
	var f struct {
		Profiles map[string]any `json:"profiles"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(doc), &f), b.Where())
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o600))
	for name := range f.Profiles {
		r := w.runEnv([]string{"KUBECTL_IMPERSONATE_CONFIG=" + path}, binary, "setup", "--profile="+name)
		assert.Equal(t, 0, r.code, "%s: profile %q: %s", b.Where(), name, r.stderr)
	}
}

var (
	flagTableRow = regexp.MustCompile("^\\| (`--?[a-z][a-z-]*(?: [A-Z]+)?`(?:[^|]*?)) \\| ([^|]*) \\|")
	flagName     = regexp.MustCompile("`(--?[a-z][a-z-]*)")
	proseDefault = regexp.MustCompile("`--([a-z-]+)`(?: \\(default ([^)]+)\\)|, default ([^ ,)]+)| \\((\\d+) ?(ms|s|m|h)\\))")
	helpDefault  = regexp.MustCompile(`\(default "?([^")]*)"?\)`)
	backticked   = regexp.MustCompile("^`([^`]*)`")
)

// flagDefault is the default --help shows for f: pflag's "(default X)",
// or ours in the usage text when the default is computed at run time.
func flagDefault(f *pflag.Flag) string {
	fs := pflag.NewFlagSet("", pflag.ContinueOnError)
	fs.AddFlag(f)
	if m := helpDefault.FindStringSubmatch(fs.FlagUsages()); m != nil {
		return normalDefault(m[1])
	}
	return ""
}

// normalDefault writes a default one way: no backticks or brackets, a
// duration as Go prints it, nothing for "none", "false" and "0".
func normalDefault(s string) string {
	s = strings.TrimSpace(s)
	if m := backticked.FindStringSubmatch(s); m != nil {
		s = m[1] // the value the docs quote: "`auto` (= `authcode`)", "`-`: stderr"
	} else if before, _, ok := strings.Cut(s, " ("); ok {
		s = before
	}
	s = strings.Trim(s, "[]")
	if d, err := time.ParseDuration(s); err == nil && s != "0" {
		return d.String()
	}
	switch s {
	case "none", "false", "0":
		return ""
	}
	return s
}

// TestDocFlagDefaults: the defaults getting-started's flag table and the docs'
// prose give are the ones the flags have (as --help shows them).
func TestDocFlagDefaults(t *testing.T) {
	root := cmd.NewRootCmd(genericiooptions.NewTestIOStreamsDiscard())
	checked := 0
	// check compares a default the docs give with the flag of command
	// (get-token's settings, unless the doc is about another command).
	check := func(where, command, name, want string) {
		c, _, err := root.Find([]string{command})
		require.NoError(t, err)
		f := c.Flag(name) // its own or inherited (-v)
		if !assert.NotNil(t, f, "%s: --%s is not a flag of %s", where, name, command) {
			return
		}
		checked++
		if want == "required" {
			assert.Contains(t, f.Usage, "(required)", "%s: --%s", where, name)
			return
		}
		assert.Equal(t, normalDefault(want), flagDefault(f), "%s: the default of --%s", where, name)
	}
	b, err := os.ReadFile(filepath.Join(docRoot, "docs/getting-started.md"))
	require.NoError(t, err)
	for n, line := range strings.Split(string(b), "\n") {
		m := flagTableRow.FindStringSubmatch(line)
		if m == nil || strings.TrimSpace(m[2]) == "" {
			continue
		}
		for _, f := range flagName.FindAllStringSubmatch(m[1], -1) {
			name := strings.TrimLeft(f[1], "-")
			check(fmt.Sprintf("docs/getting-started.md:%d", n+1), "get-token", name, strings.TrimSpace(m[2]))
		}
	}
	files, err := doctest.Files(docRoot)
	require.NoError(t, err)
	for _, file := range files {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		command := "get-token"
		if filepath.Base(file) == "proxy.md" {
			command = "proxy"
		}
		for n, line := range strings.Split(string(b), "\n") {
			for _, m := range proseDefault.FindAllStringSubmatch(line, -1) {
				check(fmt.Sprintf("%s:%d", file, n+1), command, m[1], m[2]+m[3]+m[4]+m[5])
			}
		}
	}
	t.Logf("%d documented defaults checked against the flags", checked)
	assert.Greater(t, checked, 10)
}
