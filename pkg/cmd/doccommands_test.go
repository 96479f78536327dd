package cmd

import (
	"bufio"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/authn"
)

// docCommand is one command line of a fenced shell block in the docs.
type docCommand struct {
	where string
	args  []string
}

var backslashSpace = regexp.MustCompile(`\\[ \t]+.*$`)

var fence = regexp.MustCompile("^```(sh|bash|shell|console)\\s*$")

// docCommands extracts every kubectl impersonate / kubectl-impersonate
// command of the fenced shell blocks of file: continuation lines joined,
// comments and prompts dropped, a backslash followed by anything but the
// end of the line reported (the trap that ends a command early).
func docCommands(file string) (cmds []docCommand, problems []string, err error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	in := false
	var cur strings.Builder
	start := 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case !in && fence.MatchString(line):
			in = true
			continue
		case in && strings.HasPrefix(line, "```"):
			in = false
			continue
		case !in:
			continue
		}
		if cur.Len() == 0 {
			start = n
			line = strings.TrimPrefix(strings.TrimSpace(line), "$ ")
		}
		code, _, _ := strings.Cut(line, " #") // a comment ends the shell line
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			code = ""
		}
		// A backslash continues the line only as its last character: before
		// a space it escapes the space, and a comment then ends the command.
		if m := backslashSpace.FindString(line); m != "" {
			problems = append(problems, fmt.Sprintf("%s:%d: a backslash before %q does not continue the line", file, n, strings.TrimSpace(m[1:])))
			code = ""
		}
		if trimmed := strings.TrimRight(code, " "); strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(code)
		full := strings.TrimSpace(cur.String())
		cur.Reset()
		fields := shellFields(full)
		for i := 0; i+1 < len(fields); i++ {
			if fields[i] == "kubectl" && fields[i+1] == "impersonate" {
				cmds = append(cmds, docCommand{where: file + ":" + strconv.Itoa(start), args: cut(fields[i+2:])})
				break
			}
			if filepath.Base(fields[i]) == "kubectl-impersonate" {
				cmds = append(cmds, docCommand{where: file + ":" + strconv.Itoa(start), args: cut(fields[i+1:])})
				break
			}
		}
	}
	return cmds, problems, sc.Err()
}

// cut ends a command at a shell operator.
func cut(args []string) []string {
	for i, a := range args {
		switch a {
		case "|", "&&", "||", ";", ">", "<", "2>&1", ">/dev/null":
			return args[:i]
		}
	}
	return args
}

// shellFields splits like a POSIX shell for the docs' quoting ('...', "...").
func shellFields(s string) []string {
	var out []string
	var b strings.Builder
	var quote rune
	has := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			b.WriteRune(r)
		case r == '\'' || r == '"':
			quote, has = r, true
		case r == ' ' || r == '\t':
			if has || b.Len() > 0 {
				out = append(out, b.String())
				b.Reset()
				has = false
			}
		default:
			b.WriteRune(r)
		}
	}
	if has || b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

// docFiles are README.md and docs/*.md (the generated reference aside).
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	return append(files, "../../README.md")
}

// parseDocCommand parses one command with the real command tree.
func parseDocCommand(c docCommand) error {
	root := NewRootCmd(genericiooptions.NewTestIOStreamsDiscard())
	cmd, rest, err := root.Find(c.args)
	if err != nil {
		return err
	}
	if cmd == root && len(c.args) > 0 && !strings.HasPrefix(c.args[0], "-") {
		return fmt.Errorf("unknown command %q", c.args[0])
	}
	return cmd.ParseFlags(rest)
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
		"```\n"), 0o600))
	cmds, problems, err := docCommands(file)
	require.NoError(t, err)
	require.Len(t, problems, 1)
	assert.Contains(t, problems[0], "does not continue the line")
	require.Len(t, cmds, 3, "the trapped command is reported, not parsed")
	for _, c := range cmds {
		assert.Error(t, parseDocCommand(c), "%v", c.args)
	}
}

// TestDocCommandsParse: every command the docs show parses with the real
// command tree: the command exists, every flag exists, and flag values
// parse (durations, booleans). What runs offline is run by the e2e and
// unit tests named in README; this catches renamed and mistyped flags.
func TestDocCommandsParse(t *testing.T) {
	files := docFiles(t)
	total := 0
	for _, file := range files {
		cmds, problems, err := docCommands(file)
		require.NoError(t, err)
		for _, p := range problems {
			t.Error(p)
		}
		for _, c := range cmds {
			total++
			assert.NoError(t, parseDocCommand(c), "%s: kubectl impersonate %s", c.where, strings.Join(c.args, " "))
		}
	}
	t.Logf("%d command lines of %d files parsed with the command tree", total, len(files))
	assert.Greater(t, total, 30, "the docs' commands were found")
}

var yamlFence = regexp.MustCompile("^```ya?ml\\s*$")

// elidedCA is a certificate the docs abbreviate as "...".
var elidedCA = regexp.MustCompile(`(?m)^([ \t]*)-----BEGIN CERTIFICATE-----\n[ \t]*\.\.\.\n(?:[ \t]*-----END CERTIFICATE-----\n)?`)

// withRealCA puts a real certificate where the docs abbreviate one: the
// reader pastes their provider's CA there.
func withRealCA(doc string) string {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	pemCA := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	return elidedCA.ReplaceAllStringFunc(doc, func(m string) string {
		indent := elidedCA.FindStringSubmatch(m)[1]
		var b strings.Builder
		for _, l := range strings.Split(strings.TrimSpace(pemCA), "\n") {
			b.WriteString(indent + l + "\n")
		}
		return b.String()
	})
}

// TestDocAuthenticationConfigurations: every AuthenticationConfiguration
// the docs show passes kube-apiserver's own decoding and validation (the
// file kube-apiserver would start with).
func TestDocAuthenticationConfigurations(t *testing.T) {
	files := docFiles(t)
	total := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		var block strings.Builder
		in, start := false, 0
		for n, line := range strings.Split(string(b), "\n") {
			switch {
			case !in && yamlFence.MatchString(line):
				in, start = true, n+1
				block.Reset()
			case in && strings.HasPrefix(line, "```"):
				in = false
				for _, doc := range strings.Split(block.String(), "\n---\n") {
					if !strings.Contains(doc, "kind: AuthenticationConfiguration") {
						continue
					}
					total++
					_, err := authn.LoadConfig([]byte(withRealCA(doc)))
					assert.NoError(t, err, "%s:%d: kube-apiserver would refuse this AuthenticationConfiguration", file, start)
				}
			case in:
				block.WriteString(line + "\n")
			}
		}
	}
	t.Logf("%d AuthenticationConfiguration snippets validated", total)
	assert.Positive(t, total)
}
