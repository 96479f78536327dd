//go:build e2e

package e2e

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// namespaceServer is an API server that lists namespaces (with marker
// set, two more named to run a command in a shell that expands
// candidates) and counts the bearer tokens that reach it.
type namespaceServer struct {
	*httptest.Server
	tokens atomic.Int64
}

func newNamespaceServer(t *testing.T, marker string) *namespaceServer {
	s := &namespaceServer{}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			s.tokens.Add(1)
		}
		if r.URL.Path != "/api/v1/namespaces" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		hostile := ""
		if marker != "" {
			hostile = fmt.Sprintf(`,{"metadata":{"name":"$(touch %s)"}},{"metadata":{"name":"`+"`touch %s`"+`"}}`, marker, marker)
		}
		fmt.Fprintf(w, `{"kind":"NamespaceList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"default"}}%s]}`, hostile)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *namespaceServer) caPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}))
}

// TestGateThroughKubectl: issue 46 through the pinned kubectl's plugin
// completion (kubectl __complete impersonate ...) and through the bash
// script kubectl 1.26-1.33 shipped (cobra 1.8's, whose compgen -W expands
// "$(...)" and backticks: testdata/kubectl-1.33-completion.bash). Alice's
// entry allows the e2e cluster and two others, one of which lists
// namespace names a shell would run; a kubeconfig from elsewhere merged
// into KUBECONFIG names her user on a cluster of its own and has contexts
// named to run a command. TAB there sends her token nowhere; TAB on the
// allowed clusters offers the namespaces, nothing from a server that
// lists a name no namespace can have, and no such context; the old script
// runs nothing.
func TestGateThroughKubectl(t *testing.T) {
	api := st.api["legacy"]
	marker := filepath.Join(t.TempDir(), "pwned")
	listing := newNamespaceServer(t, "")
	evilListing := newNamespaceServer(t, marker)
	foreign := newNamespaceServer(t, "")
	alice := newPerson(t, "alice", api, "--allowed-server="+api.url, "--allowed-server="+listing.URL, "--allowed-server="+evilListing.URL)
	r := alice.kubectl("auth", "whoami")
	require.Equal(t, 0, r.code, r.stderr)

	caFile := func(name, pemText string) string {
		p := filepath.Join(alice.home, name+".crt")
		require.NoError(t, os.WriteFile(p, []byte(pemText), 0o600))
		return p
	}
	hostile := filepath.Join(alice.home, "downloaded.kubeconfig")
	require.NoError(t, os.WriteFile(hostile, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: theirs
  cluster: {server: %q, certificate-authority: %q}
- name: theirs-unverified
  cluster: {server: %q, insecure-skip-tls-verify: true}
- name: listing
  cluster: {server: %q, certificate-authority: %q}
- name: evil-listing
  cluster: {server: %q, certificate-authority: %q}
contexts:
- name: theirs
  context: {cluster: theirs, user: alice}
- name: theirs-unverified
  context: {cluster: theirs-unverified, user: alice}
- name: listing
  context: {cluster: listing, user: alice}
- name: evil-listing
  context: {cluster: evil-listing, user: alice}
- name: "$(touch %s)"
  context: {cluster: listing, user: alice}
- name: "`+"`touch %s`"+`"
  context: {cluster: listing, user: alice}
`, foreign.URL, caFile("foreign", foreign.caPEM()), api.url, listing.URL, caFile("listing", listing.caPEM()),
		evilListing.URL, caFile("evil", evilListing.caPEM()), marker, marker)), 0o600))
	alice.env = append(alice.env, "KUBECONFIG="+alice.kubeconfig+":"+hostile)
	complete := completer(t, alice)

	for _, context := range []string{"theirs", "theirs-unverified"} {
		for _, words := range [][]string{{"access", "-n", ""}, {"who-can", "list", ""}, {"why", "get", ""}} {
			got, r := complete(append([]string{words[0], "--context", context}, words[1:]...)...)
			require.Equal(t, 0, r.code, r.stderr)
			assert.Empty(t, got, "%s %v: no candidates from a server the token may not reach", context, words)
		}
	}
	assert.Zero(t, foreign.tokens.Load(), "TAB sent alice's token to the foreign cluster")

	got, r := complete("access", "--context", "listing", "-n", "")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, []string{"default"}, got, "control: the allowed cluster's namespaces")
	assert.Positive(t, listing.tokens.Load(), "control: the allowed cluster got the token")
	got, r = complete("access", "--context", "evil-listing", "-n", "")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Empty(t, got, "a list with a name no namespace can have is refused whole")
	got, r = complete("whoami", "--context", "")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, got, "listing")
	for _, c := range got {
		assert.NotContains(t, c, "touch", "a context named to run a command is offered")
	}

	// kubectl 1.33's bash completion, kubectl being the pinned one.
	bin := t.TempDir()
	require.NoError(t, os.Symlink(st.kubectl, filepath.Join(bin, "kubectl")))
	env := append([]string{}, alice.env...)
	for i, e := range env {
		if strings.HasPrefix(e, "PATH=") {
			env[i] = "PATH=" + bin + ":" + filepath.Dir(st.ki) + ":" + strings.TrimPrefix(e, "PATH=")
		}
	}
	script, err := filepath.Abs(filepath.Join("testdata", "kubectl-1.33-completion.bash"))
	require.NoError(t, err)
	for _, tt := range []struct{ words, want string }{
		{"kubectl impersonate access --context listing -n ''", "default"},
		{"kubectl impersonate access --context evil-listing -n ''", ""},
		{"kubectl impersonate whoami --context list", "listing"},
		{"kubectl impersonate whoami --context ''", "evil-listing"},
	} {
		r = run(t, env, false, "bash", "-c", `source /usr/share/bash-completion/bash_completion; source "$1"; eval "COMP_WORDS=($2)"; COMP_CWORD=$((${#COMP_WORDS[@]}-1)); COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}; COMP_TYPE=9; __start_kubectl kubectl 2>/dev/null; printf '%s\n' "${COMPREPLY[@]}"`, "bash", script, tt.words)
		require.Equal(t, 0, r.code, r.stderr)
		if tt.want == "" {
			assert.Empty(t, strings.TrimSpace(r.stdout), tt.words)
		} else {
			assert.Contains(t, strings.Fields(r.stdout), tt.want, "%s: the old script offers it", tt.words)
		}
		assert.NotContains(t, r.stdout, "touch", tt.words)
		assert.NoFileExists(t, marker, "%s: the old script ran a command from a name", tt.words)
	}
}
