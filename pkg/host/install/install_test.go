package install

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKrewLink(t *testing.T) {
	root := t.TempDir()
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	store := filepath.Join(root, "store", "impersonate", "v1.2.3")
	require.NoError(t, os.MkdirAll(store, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "bin"), 0o755))
	fast := filepath.Join(store, Exe(FastBinaryName))
	require.NoError(t, os.WriteFile(fast, nil, 0o755))
	link := filepath.Join(root, "bin", Exe(FullBinaryName))
	require.NoError(t, os.Symlink(fast, link))
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "KREW_ROOT" {
				return v
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name     string
		full     string
		krewRoot string
		wantLink string
	}{
		{"from Krew's store", filepath.Join(store, Exe(FullBinaryName)), root, link},
		{"another plugin's store", filepath.Join(root, "store", "impersonatex", "v1", Exe(FullBinaryName)), root, ""},
		{"go install", "/root/go/bin/" + Exe(FullBinaryName), root, ""},
		{"another Krew root", filepath.Join(store, Exe(FullBinaryName)), t.TempDir(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := KrewLink(tc.full, env(tc.krewRoot))
			assert.Equal(t, tc.wantLink, got)
			assert.Equal(t, tc.wantLink != "", ok)
		})
	}
}

// TestNextRefusesItself: a sibling that is this very binary (a link to it)
// would receive the hand-off and hand it on again, forever.
func TestNextRefusesItself(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	self, err = filepath.EvalSymlinks(self)
	require.NoError(t, err)
	dir := filepath.Dir(self)
	link := filepath.Join(dir, Exe("ki-test-link"))
	require.NoError(t, os.Symlink(self, link))
	t.Cleanup(func() { _ = os.Remove(link) })
	_, err = Next("ki-test-link")
	assert.ErrorContains(t, err, "under another binary's name")

	other := filepath.Join(dir, Exe("ki-test-other"))
	require.NoError(t, os.WriteFile(other, []byte("#!/bin/sh\n"), 0o755))
	t.Cleanup(func() { _ = os.Remove(other) })
	got, err := Next("ki-test-other")
	require.NoError(t, err)
	assert.Equal(t, other, got)

	_, err = Next("ki-test-missing")
	assert.ErrorContains(t, err, "is not next to")
}
