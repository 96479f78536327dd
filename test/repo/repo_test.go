// Package repo checks the repository as a whole: what README and the docs
// say against what the build files pin, and CI's lists against the code.
// The checks that run commands (docs' examples, flag defaults) live with
// the commands (test/integration/docs_test.go).
package repo

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const docRoot = "../../"

// TestDocPinnedVersions: the versions of the peers README and the docs
// name are the ones the build files pin.
func TestDocPinnedVersions(t *testing.T) {
	read := func(path string) string {
		b, err := os.ReadFile(filepath.Join(docRoot, path))
		require.NoError(t, err)
		return string(b)
	}
	// prose is a doc with its line breaks and indents as single spaces.
	prose := func(path string) string { return strings.Join(strings.Fields(read(path)), " ") }
	pinned := func(path, pattern string) string {
		m := regexp.MustCompile(pattern).FindStringSubmatch(read(path))
		require.NotNil(t, m, "%s pins %s", path, pattern)
		return m[1]
	}
	// The Kubernetes releases the end-to-end suite runs (run.sh), as the docs name them.
	versions := strings.Fields(pinned("test/e2e/run.sh", `E2E_K8S_VERSIONS:-([\d. ]+)\}`))
	require.Len(t, versions, 2)
	newest, oldest := versions[0], versions[1]
	for _, tc := range []struct{ doc, says, path, pattern string }{
		{"docs/testing.md", "kube-apiserver and kubectl **%s**", "test/e2e/tools/kube-" + newest + "/go.mod", `k8s.io/kubernetes v(\S+)`},
		{"docs/testing.md", "and **%s**", "test/e2e/tools/kube-" + oldest + "/go.mod", `k8s.io/kubernetes v(\S+)`},
		{"docs/testing.md", "with etcd %s,", "test/e2e/tools/etcd/go.mod", `go.etcd.io/etcd/server/v3 v(\S+)`},
		{"docs/testing.md", "Krew %s", "hack/tools/go.mod", `sigs.k8s.io/krew (v\S+)`},
		{"docs/dex.md", "(commit %s of", "test/e2e/tools/dex/go.mod", `github.com/dexidp/dex v0\.0\.0-\d+-([0-9a-f]+)`},
		{"docs/identity-platform.md", "`firebase-tools` %s,", "test/e2e/run.sh", `firebase_version=(\S+)`},
		{"README.md", "a fresh machine with Go %s", "go.mod", `(?m)^go (\d+\.\d+)`},
		{"README.md", "a local kube-apiserver %s", "hack/demo.sh", `build\.sh (\d+\.\d+)`},
	} {
		v := pinned(tc.path, tc.pattern)
		assert.Contains(t, prose(tc.doc), fmt.Sprintf(tc.says, v), "%s names %s's pin", tc.doc, tc.path)
	}
	for _, tc := range []struct{ doc, says string }{
		{"README.md", "end-to-end on Kubernetes %[1]s and %[2]s"},
		{"docs/apiserver-authentication.md", "(kube-apiserver %[1]s and %[2]s)"},
		{"docs/troubleshooting.md", "the tests run %[2]s and %[1]s"},
		{"docs/troubleshooting.md", "with kubectl %[1]s and %[2]s"},
	} {
		assert.Contains(t, prose(tc.doc), fmt.Sprintf(tc.says, newest, oldest), "%s names run.sh's releases", tc.doc)
	}
	for _, v := range versions {
		_, err := os.Stat(filepath.Join(docRoot, "test/e2e/tools/kube-"+v, "go.mod"))
		assert.NoError(t, err, "run.sh's release %s has its pinned tools module", v)
	}
}

// TestFuzzTargetsListed: hack/fuzz.sh (CI's fuzzing) runs every fuzz
// target of the repository, as many as docs/testing.md says.
func TestFuzzTargetsListed(t *testing.T) {
	var found []string
	require.NoError(t, filepath.WalkDir(docRoot, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range regexp.MustCompile(`(?m)^func (Fuzz\w+)\(`).FindAllStringSubmatch(string(b), -1) {
			found = append(found, "./"+filepath.ToSlash(filepath.Dir(strings.TrimPrefix(path, docRoot)))+" "+m[1])
		}
		return nil
	}))
	script, err := os.ReadFile(filepath.Join(docRoot, "hack/fuzz.sh"))
	require.NoError(t, err)
	var listed []string
	for _, m := range regexp.MustCompile(`(?m)^  "(\./\S+ Fuzz\w+)"$`).FindAllStringSubmatch(string(script), -1) {
		listed = append(listed, m[1])
	}
	assert.ElementsMatch(t, found, listed, "hack/fuzz.sh lists every fuzz target")
	doc, err := os.ReadFile(filepath.Join(docRoot, "docs/testing.md"))
	require.NoError(t, err)
	assert.Contains(t, string(doc), fmt.Sprintf("(`.ci/run`: %d targets,", len(found)))
}

// TestVersionStamp: the release and make's -X flags name a variable that
// exists (a moved package would leave builds unstamped, silently).
func TestVersionStamp(t *testing.T) {
	const mod = "github.com/kubectl-impersonate/kubectl-impersonate/"
	n := 0
	for _, file := range []string{"Makefile", ".goreleaser.yaml"} {
		b, err := os.ReadFile(filepath.Join(docRoot, file))
		require.NoError(t, err)
		for _, m := range regexp.MustCompile(`-X (?:\$\(PKG\)/|`+regexp.QuoteMeta(mod)+`)(\S+)\.(\w+)=`).FindAllStringSubmatch(string(b), -1) {
			n++
			dir, name := m[1], m[2]
			found := false
			files, _ := filepath.Glob(filepath.Join(docRoot, dir, "*.go"))
			for _, f := range files {
				src, err := os.ReadFile(f)
				require.NoError(t, err)
				found = found || regexp.MustCompile(`(?m)^\s*`+name+`\s*=\s*""`).Match(src)
			}
			assert.True(t, found, "%s: -X %s.%s names no variable", file, dir, name)
		}
	}
	assert.GreaterOrEqual(t, n, 6, "the -X flags found")
}

// TestKrewManifestIsGenerated: the committed Krew manifest is what
// hack/krew-manifest.sh writes for its version and sums (it once lagged
// the generator: two binaries an archive where the archives hold four).
// Its shape only: the sums of a generated manifest are checked against
// the archives' bytes by test/release (TestKrewManifestNamesTheArchives).
func TestKrewManifestIsGenerated(t *testing.T) {
	committed, err := os.ReadFile(filepath.Join(docRoot, "krew/impersonate.yaml"))
	require.NoError(t, err)
	version := regexp.MustCompile(`(?m)^  version: v(\S+)$`).FindSubmatch(committed)
	require.NotNil(t, version, "spec.version")
	dir := t.TempDir()
	var sums strings.Builder
	var platforms []string
	for _, m := range regexp.MustCompile(`(?m)^    uri: \S+/(kubectl-impersonate_\S+_(\w+)_(\w+)\.(?:tar\.gz|zip))\n    sha256: ([0-9a-f]{64})$`).FindAllSubmatch(committed, -1) {
		fmt.Fprintf(&sums, "%s  %s\n", m[4], m[1])
		platforms = append(platforms, string(m[2])+"/"+string(m[3]))
	}
	require.Len(t, platforms, 6, "linux, darwin, windows x amd64, arm64")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "checksums.txt"), []byte(sums.String()), 0o600))
	out := filepath.Join(dir, "impersonate.yaml")
	cmd := exec.Command(filepath.Join(docRoot, "hack/krew-manifest.sh"), string(version[1]), dir, out)
	cmd.Env = append(os.Environ(), "PLATFORMS="+strings.Join(platforms, " "))
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, string(b))
	generated, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, string(generated), string(committed), "krew/impersonate.yaml is not what hack/krew-manifest.sh writes: regenerate it")
}

// TestNamedMutantsApply: every named mutant of make mutation
// (hack/mutants/*.patch) still applies to the tree, so that a rename or an
// edit of the code it mutates is caught by make unit rather than at the
// end of CI (issue 48's rename of pkg/cmd's inspect package broke two).
func TestNamedMutantsApply(t *testing.T) {
	patches, err := filepath.Glob(filepath.Join(docRoot, "hack/mutants/*.patch"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(patches), 12, "the named mutants")
	for _, p := range patches {
		abs, err := filepath.Abs(p)
		require.NoError(t, err)
		out, err := exec.Command("git", "-C", docRoot, "apply", "--check", abs).CombinedOutput()
		assert.NoError(t, err, "%s no longer applies: update it (%s)", filepath.Base(p), strings.TrimSpace(string(out)))
	}
}
