//go:build release

package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReproducible: the commit's snapshot, built again from a fresh clone
// at another path, is the same byte for byte: the archive, its SBOM, the
// checksums file, the image (its digest) and its SBOM, the Krew and deploy
// manifests. The release's six platforms build the same way (make
// release-snapshot); the host's is enough for the check.
func TestReproducible(t *testing.T) {
	dist := os.Getenv("KI_DIST")
	require.NotEmpty(t, dist, "KI_DIST: run through make release-test")
	status, err := exec.Command("git", "-C", repoRoot, "status", "--porcelain", "--untracked-files=no").Output()
	require.NoError(t, err)
	require.Empty(t, strings.TrimSpace(string(status)), "the work tree has uncommitted changes: a release is built from a commit (commit, then make release-test)")

	clone := filepath.Join(t.TempDir(), "another", "path", "kubectl-impersonate")
	out, err := exec.Command("git", "clone", "-q", "--no-local", repoRoot, clone).CombinedOutput()
	require.NoError(t, err, string(out))
	build := exec.Command("make", "snapshot-host")
	build.Dir = clone
	out, err = build.CombinedOutput()
	require.NoError(t, err, "make snapshot-host in the clone: %s", out)

	again := filepath.Join(clone, "dist-host")
	files := []string{"checksums.txt", "image.ref", "image.cdx.json", "krew/impersonate.yaml", "deploy/proxy/proxy.yaml"}
	archives, _ := filepath.Glob(filepath.Join(dist, "kubectl-impersonate_*.tar.gz*"))
	require.Len(t, archives, 2, "the archive and its SBOM")
	for _, a := range archives {
		files = append(files, filepath.Base(a))
	}
	for _, f := range files {
		want, err := os.ReadFile(filepath.Join(dist, f))
		require.NoError(t, err, f)
		got, err := os.ReadFile(filepath.Join(again, f))
		require.NoError(t, err, f)
		assert.True(t, string(want) == string(got), "%s differs when built again from another clone", f)
	}
	t.Logf("rebuilt at %s: %d files the same byte for byte", clone, len(files))
}
