package kuberc

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/kubectl/pkg/config"
	"k8s.io/kubectl/pkg/config/scheme"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testfs"
)

// decode reads a kuberc with kubectl's own strict decoder and types.
func decode(t *testing.T, path string) *config.Preference {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	obj, _, err := scheme.StrictCodecs.UniversalDecoder().Decode(b, nil, nil)
	require.NoError(t, err, "kubectl decodes the kuberc strictly")
	p, ok := obj.(*config.Preference)
	require.True(t, ok, "%T", obj)
	return p
}

func TestAllow(t *testing.T) {
	dir := t.TempDir()
	plugin := filepath.Join(dir, "kubectl-impersonate-get_token")
	require.NoError(t, os.WriteFile(plugin, []byte("#!/bin/sh\n"), 0o755))
	other := filepath.Join(dir, "other-plugin")
	require.NoError(t, os.WriteFile(other, []byte("#!/bin/sh\n"), 0o755))
	tests := []struct {
		name        string
		kuberc      string // "" means no file
		mode        os.FileMode
		wantVerdict Verdict
		wantChanged bool
		wantErr     error
		wantEntries []string
	}{
		{name: "no kuberc: nothing to allow", wantVerdict: NoPolicy},
		{name: "AllowAll", kuberc: "apiVersion: kubectl.config.k8s.io/v1beta1\nkind: Preference\ncredentialPluginPolicy: AllowAll\n", mode: 0o600, wantVerdict: NoPolicy},
		{name: "DenyAll refused", kuberc: "apiVersion: kubectl.config.k8s.io/v1beta1\nkind: Preference\ncredentialPluginPolicy: DenyAll\n", mode: 0o600, wantVerdict: DenyAll, wantErr: ErrDenyAll},
		{name: "allowlist without us: added, the rest kept", mode: 0o640, wantVerdict: NotListed, wantChanged: true,
			kuberc: `apiVersion: kubectl.config.k8s.io/v1beta1
kind: Preference
defaults:
- command: delete
  options:
  - name: interactive
    default: "true"
aliases:
- name: getn
  command: get
  prependArgs: [namespace]
credentialPluginPolicy: Allowlist
credentialPluginAllowlist:
- name: ` + other + "\n",
			wantEntries: []string{other, plugin}},
		{name: "already listed: unchanged", mode: 0o600, wantVerdict: Listed,
			kuberc: "apiVersion: kubectl.config.k8s.io/v1beta1\nkind: Preference\ncredentialPluginPolicy: Allowlist\ncredentialPluginAllowlist:\n- name: " + plugin + "\n", wantEntries: []string{plugin}},
		{name: "listed under command (kubectl 1.36+)", mode: 0o600, wantVerdict: Listed,
			kuberc: "apiVersion: kubectl.config.k8s.io/v1beta1\nkind: Preference\ncredentialPluginPolicy: Allowlist\ncredentialPluginAllowlist:\n- command: " + plugin + "\n", wantEntries: []string{plugin}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kuberc")
			if tt.kuberc != "" {
				require.NoError(t, os.WriteFile(path, []byte(tt.kuberc), tt.mode))
				require.NoError(t, os.Chmod(path, tt.mode))
			}
			v, changed, err := Allow(path, plugin)
			assert.Equal(t, tt.wantVerdict, v)
			assert.Equal(t, tt.wantChanged, changed)
			if tt.wantErr != nil {
				assert.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			if tt.kuberc == "" {
				assert.NoFileExists(t, path, "no kuberc is created")
				return
			}
			fi, err := os.Stat(path)
			require.NoError(t, err)
			assert.Equal(t, tt.mode, fi.Mode().Perm(), "file mode kept")
			p := decode(t, path)
			var got []string
			for _, e := range p.CredentialPluginAllowlist {
				got = append(got, e.Command)
			}
			assert.Equal(t, tt.wantEntries, got)
			if tt.name == "allowlist without us: added, the rest kept" {
				require.Len(t, p.Defaults, 1)
				assert.Equal(t, "delete", p.Defaults[0].Command)
				require.Len(t, p.Aliases, 1)
				assert.Equal(t, []string{"namespace"}, p.Aliases[0].PrependArgs)
				v, err := Check(path, plugin)
				require.NoError(t, err)
				assert.Equal(t, Listed, v)
			}
		})
	}
}

func TestAllowFollowsSymlinks(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real-kuberc")
	require.NoError(t, os.WriteFile(target, []byte("apiVersion: kubectl.config.k8s.io/v1beta1\nkind: Preference\ncredentialPluginPolicy: Allowlist\ncredentialPluginAllowlist:\n- name: /bin/true\n"), 0o600))
	link := filepath.Join(dir, "kuberc")
	require.NoError(t, os.Symlink(target, link))
	_, changed, err := Allow(link, "/bin/false")
	require.NoError(t, err)
	assert.True(t, changed)
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink, "the link stays a link")
	assert.Len(t, decode(t, target).CredentialPluginAllowlist, 2)
}

func TestSnippetDecodes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kuberc")
	require.NoError(t, os.WriteFile(path, []byte(snippet("/usr/local/bin/kubectl-impersonate-get_token")), 0o600))
	p := decode(t, path)
	assert.Equal(t, config.PluginPolicyAllowlist, p.CredentialPluginPolicy)
}

func TestPath(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	p, off, err := Path(env(map[string]string{"HOME": "/home/me"}))
	require.NoError(t, err)
	assert.False(t, off)
	assert.Equal(t, "/home/me/.kube/kuberc", p)
	p, _, _ = Path(env(map[string]string{"KUBERC": "/etc/kuberc", "HOME": "/home/me"}))
	assert.Equal(t, "/etc/kuberc", p)
	_, off, _ = Path(env(map[string]string{"KUBERC": "off"}))
	assert.True(t, off)
}

// snippet is the YAML a user adds by hand.
func snippet(command string) string {
	return fmt.Sprintf("apiVersion: %s\nkind: %s\ncredentialPluginPolicy: Allowlist\ncredentialPluginAllowlist:\n- name: %s\n", apiVersion, kind, command)
}

// TestReadIsBounded: $KUBERC may name anything; a FIFO or /dev/zero is
// refused at once, not waited on or read forever.
func TestReadIsBounded(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	testfs.Mkfifo(t, fifo)
	for _, path := range []string{fifo, "/dev/zero"} {
		_, err := Check(path, "kubectl-impersonate")
		assert.ErrorContains(t, err, "is not a regular file", path)
	}
}

// TestPolicy: the kuberc's credential plugin policy in client-go's form,
// which the plugin's own API clients apply to every exec entry (issue 46).
func TestPolicy(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	const head = "apiVersion: kubectl.config.k8s.io/v1beta1\nkind: Preference\n"
	for _, tt := range []struct {
		name    string
		kuberc  string // "" no file, "off" KUBERC=off
		want    PluginPolicy
		wantErr string
	}{
		{name: "no kuberc", kuberc: filepath.Join(dir, "missing")},
		{name: "KUBERC=off", kuberc: "off"},
		{name: "no policy", kuberc: write("none", head)},
		{name: "AllowAll", kuberc: write("all", head+"credentialPluginPolicy: AllowAll\n")},
		{name: "DenyAll", kuberc: write("deny", head+"credentialPluginPolicy: DenyAll\n"), want: PluginPolicy{Type: "DenyAll"}},
		{name: "Allowlist by name and by command", kuberc: write("list", head+"credentialPluginPolicy: Allowlist\ncredentialPluginAllowlist:\n- name: kubectl-impersonate-get_token\n- command: /usr/bin/aws\n"),
			want: PluginPolicy{Type: "Allowlist", Commands: []string{"kubectl-impersonate-get_token", "/usr/bin/aws"}}},
		{name: "Allowlist, empty", kuberc: write("empty", head+"credentialPluginPolicy: Allowlist\n"),
			want: PluginPolicy{Type: "Allowlist", Commands: []string{}}},
		{name: "an unknown policy", kuberc: write("unknown", head+"credentialPluginPolicy: Sometimes\n"), wantErr: `credentialPluginPolicy "Sometimes" is not one of`},
		{name: "unparsable", kuberc: write("bad", "credentialPluginPolicy: [\n"), wantErr: "error converting YAML to JSON"},
		{name: "the Preference is the second document", kuberc: write("multi", "apiVersion: v1\nkind: Other\ncredentialPluginPolicy: AllowAll\n---\n"+head+"credentialPluginPolicy: DenyAll\n"),
			want: PluginPolicy{Type: "DenyAll"}},
		{name: "an entry with a name and another command", kuberc: write("both", head+"credentialPluginPolicy: Allowlist\ncredentialPluginAllowlist:\n- name: a\n  command: b\n"), wantErr: "kubectl refuses it"},
		{name: "an entry with the same name and command", kuberc: write("same", head+"credentialPluginPolicy: Allowlist\ncredentialPluginAllowlist:\n- name: a\n  command: a\n"),
			want: PluginPolicy{Type: "Allowlist", Commands: []string{"a"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Policy(func(k string) string { return map[string]string{EnvKuberc: tt.kuberc, "HOME": dir}[k] })
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			if tt.kuberc != "off" && !strings.Contains(tt.name, "document") {
				if _, err := os.Stat(tt.kuberc); err == nil {
					decode(t, tt.kuberc) // kubectl reads the same file
				}
			}
		})
	}
}

// TestCandidates: the one list of a kuberc's places, read by Path (its
// first) and by the exec-entry lock (all of them).
func TestCandidates(t *testing.T) {
	home := filepath.Join("h", ".kube", "kuberc")
	for _, tt := range []struct {
		kuberc, home string
		want         []string
	}{
		{"", "h", []string{home}},
		{"/k", "h", []string{"/k", home}},
		{"off", "h", []string{home}},
		{"/k", "", []string{"/k"}},
		{"", "", nil},
	} {
		assert.Equal(t, tt.want, Candidates(tt.kuberc, tt.home), "%q %q", tt.kuberc, tt.home)
	}
}
