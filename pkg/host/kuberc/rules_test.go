package kuberc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWhichDocumentIsThePolicy: kubectl takes the first Preference of the
// kuberc's documents, and a file of one document without a kind is that
// one; a kindless document among several is not.
func TestWhichDocumentIsThePolicy(t *testing.T) {
	dir := t.TempDir()
	const deny = "credentialPluginPolicy: DenyAll\n"
	for _, tc := range []struct {
		name, kuberc string
		want         Verdict
	}{
		{"one document, no kind", deny, DenyAll},
		{"one document, another kind", "kind: Other\n" + deny, NoPolicy},
		{"a kindless document before the Preference", deny + "---\nkind: Preference\ncredentialPluginPolicy: AllowAll\n", NoPolicy},
		{"the Preference after a kindless document", "credentialPluginPolicy: AllowAll\n---\nkind: Preference\n" + deny, DenyAll},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			require.NoError(t, os.WriteFile(path, []byte(tc.kuberc), 0o600))
			got, err := Check(path, "kubectl-impersonate-get_token")
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestSameCommandResolvesBoth: an allowlist entry and the exec command
// match as kubectl matches them, both resolved with exec.LookPath: a name
// on PATH matches the absolute path it resolves to, either way round; two
// that do not resolve match only as the same path.
func TestSameCommandResolvesBoth(t *testing.T) {
	dir := t.TempDir()
	plugin := filepath.Join(dir, "kubectl-impersonate-get_token")
	require.NoError(t, os.WriteFile(plugin, []byte("#!/bin/sh\n"), 0o755))
	t.Setenv("PATH", dir)
	for _, tc := range []struct {
		entry, command string
		want           bool
	}{
		{"kubectl-impersonate-get_token", plugin, true},
		{plugin, "kubectl-impersonate-get_token", true},
		{plugin, plugin, true},
		{"kubectl-impersonate-get_token", filepath.Join(dir, "other"), false},
		{"no-such-plugin", "no-such-plugin", true},
		{"no-such-plugin", "./no-such-plugin/../no-such-plugin", true},
		{"no-such-plugin", "another", false},
		{"", plugin, false},
	} {
		assert.Equal(t, tc.want, sameCommand(tc.entry, tc.command), "%q and %q", tc.entry, tc.command)
	}
}

// TestAllowKeepsTheHeader: Allow adds kubectl's apiVersion and kind to a
// kuberc that lacks them, and keeps those it has.
func TestAllowKeepsTheHeader(t *testing.T) {
	for _, tc := range []struct {
		name, header, wantAPIVersion string
	}{
		{"no header", "", apiVersion},
		{"its own apiVersion", "apiVersion: kubectl.config.k8s.io/v1alpha1\nkind: Preference\n", "kubectl.config.k8s.io/v1alpha1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kuberc")
			require.NoError(t, os.WriteFile(path, []byte(tc.header+"credentialPluginPolicy: Allowlist\n"), 0o600))
			_, changed, err := Allow(path, "/bin/true")
			require.NoError(t, err)
			assert.True(t, changed)
			d, err := read(path)
			require.NoError(t, err)
			assert.Equal(t, tc.wantAPIVersion, d["apiVersion"])
			assert.Equal(t, kind, d["kind"])
		})
	}
}

// TestPathWithoutAHome: with neither $KUBERC nor a home directory there is
// no kuberc to name: an error, not a path at the root.
func TestPathWithoutAHome(t *testing.T) {
	_, _, err := Path(func(string) string { return "" })
	assert.ErrorContains(t, err, "finding the kuberc")
}
