//go:build release

package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReproducible: the commit's snapshot, built again from a fresh clone
// at another path with an empty Go build cache (every package compiled
// again: the compiler's determinism is tested, not the cache's), is the
// same byte for byte: every archive and its SBOM, the checksums file, the
// image (its digest) and its SBOM, the Krew and deploy manifests. make
// release-test rebuilds the host's platform (KI_REBUILD=snapshot-host),
// make release-test-all the six (release-snapshot).
func TestReproducible(t *testing.T) {
	dist, target := os.Getenv("KI_DIST"), os.Getenv("KI_REBUILD")
	require.True(t, dist != "" && target != "", "KI_DIST, KI_REBUILD: run through make release-test")
	status, err := exec.Command("git", "-C", repoRoot, "status", "--porcelain", "--untracked-files=no").Output()
	require.NoError(t, err)
	require.Empty(t, strings.TrimSpace(string(status)), "the work tree has uncommitted changes: a release is built from a commit (commit, then make release-test)")

	clone := filepath.Join(t.TempDir(), "another", "path", "kubectl-impersonate")
	out, err := exec.Command("git", "clone", "-q", "--no-local", repoRoot, clone).CombinedOutput()
	require.NoError(t, err, string(out))
	gocache := t.TempDir()
	build := exec.Command("make", target)
	build.Dir = clone
	build.Env = append(os.Environ(), "GOCACHE="+gocache)
	start := time.Now()
	out, err = build.CombinedOutput()
	require.NoError(t, err, "make %s in the clone: %s", target, out)
	entries, err := os.ReadDir(gocache)
	require.NoError(t, err)
	require.NotEmpty(t, entries, "the clone's build filled its own, empty, build cache")
	t.Logf("make %s in %s with an empty GOCACHE: %s", target, clone, time.Since(start).Round(time.Second))

	again := filepath.Join(clone, filepath.Base(dist))
	files := []string{"checksums.txt", "image.ref", "image.cdx.json", "krew/impersonate.yaml", "deploy/proxy/proxy.yaml"}
	archives, _ := filepath.Glob(filepath.Join(dist, "kubectl-impersonate_*"))
	for _, a := range archives {
		if fi, err := os.Stat(a); err == nil && fi.Mode().IsRegular() {
			files = append(files, filepath.Base(a))
		}
	}
	want := 2
	if target == "release-snapshot" {
		want = 12
	}
	require.Len(t, files, 5+want, "the archives and their SBOMs: %v", archives)
	for _, f := range files {
		w, err := os.ReadFile(filepath.Join(dist, f))
		require.NoError(t, err, f)
		g, err := os.ReadFile(filepath.Join(again, f))
		require.NoError(t, err, f)
		assert.True(t, string(w) == string(g), "%s differs when built again from another clone with an empty build cache", f)
	}
	t.Logf("%d files the same byte for byte", len(files))
}
