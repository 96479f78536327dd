//go:build release

package release

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
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
)

const repoRoot = "../.."

func sha256File(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	h := sha256.New()
	_, err = io.Copy(h, f)
	require.NoError(t, err)
	return hex.EncodeToString(h.Sum(nil))
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, b, 0o644))
}

// documented are the blocks of README.md and docs/install.md that the
// release test runs as written (their opt-out marker names this test).
func documented(t *testing.T) []doctest.Block {
	t.Helper()
	var out []doctest.Block
	for _, f := range []string{"README.md", "docs/install.md"} {
		blocks, err := doctest.Blocks(filepath.Join(repoRoot, f))
		require.NoError(t, err)
		for _, b := range blocks {
			if strings.Contains(b.Skip, "TestVerifyAsDocumented") {
				out = append(out, b)
			}
		}
	}
	require.GreaterOrEqual(t, len(out), 5, "README's two commands and install.md's four blocks")
	return out
}

// substitute is what docs/install.md says the test changes: the version
// and the image's digest, the registry (127.0.0.1, plain HTTP), and the
// offline flags on every cosign verification (Rekor is out of reach here).
func substitute(body, version, digest, registry string) string {
	const offline = " --trusted-root offline-trusted-root.json --insecure-ignore-tlog=true"
	body = regexp.MustCompile(`(?m)^version=\S+$`).ReplaceAllString(body, "version="+version)
	body = regexp.MustCompile(`(?m)^digest=\S+$`).ReplaceAllString(body, "digest="+digest)
	body = strings.ReplaceAll(body, "ghcr.io/kubectl-impersonate/kubectl-impersonate", registry+"/kubectl-impersonate/kubectl-impersonate")
	for _, c := range []string{"cosign verify-blob-attestation ", "cosign verify-blob ", "cosign verify "} {
		extra := offline
		if c == "cosign verify " {
			extra += " --allow-http-registry"
		}
		body = regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(c)).ReplaceAllString(body, strings.TrimSpace(c)+extra+" ")
	}
	return body
}

// runBlock runs body in dir with the tools on PATH; it returns the
// output and whether it succeeded.
func runBlock(t *testing.T, dir, tools, body string) (string, bool) {
	t.Helper()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", body)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+tools+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

// serveImage starts oci-serve with the snapshot's image; it returns the
// registry's host:port and the image's reference by tag and digest.
func serveImage(t *testing.T, tools, dist, version string) (string, string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(tools, "oci-serve"), "-layout", filepath.Join(dist, "image"), "-tag", version)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	select {
	case ref, ok := <-line:
		require.True(t, ok, "oci-serve printed no reference")
		return strings.SplitN(ref, "/", 2)[0], ref
	case <-time.After(time.Minute):
		t.Fatal("oci-serve did not start within a minute")
	}
	return "", ""
}

// TestVerifyAsDocumented: the snapshot, signed by hack/release-sign.sh with
// a key of the test's (and its image through a registry on 127.0.0.1),
// verifies with the commands of docs/install.md and README.md as written
// (the substitutions docs/install.md names); and each verification fails
// when what it checks is not the project's: an archive changed by one
// byte, a checksums file changed, a statement that does not name the
// archive, a signature by another key, an image nobody signed.
func TestVerifyAsDocumented(t *testing.T) {
	dist, tools := os.Getenv("KI_DIST"), os.Getenv("KI_TOOLS")
	require.True(t, dist != "" && tools != "", "KI_DIST, KI_TOOLS: run through make release-test")
	archives, _ := filepath.Glob(filepath.Join(dist, "kubectl-impersonate_*_linux_amd64.tar.gz"))
	require.Len(t, archives, 1)
	archive := archives[0]
	version := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(archive), "kubectl-impersonate_"), "_linux_amd64.tar.gz")

	keys := t.TempDir()
	gen := func(dir string) {
		cmd := exec.Command(filepath.Join(tools, "cosign"), "generate-key-pair")
		cmd.Dir, cmd.Env = dir, append(os.Environ(), "COSIGN_PASSWORD=release-test")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
	}
	gen(keys)
	registry, ref := serveImage(t, tools, dist, version)
	sign := exec.Command("hack/release-sign.sh", dist)
	sign.Dir = repoRoot
	sign.Env = append(os.Environ(), "COSIGN_KEY="+filepath.Join(keys, "cosign.key"), "COSIGN_PASSWORD=release-test",
		"COSIGN_TLOG=false", "IMAGE_REF="+ref, "IMAGE_INSECURE=true")
	out, err := sign.CombinedOutput()
	require.NoError(t, err, "hack/release-sign.sh: %s", out)
	t.Logf("%s", out)

	downloads := t.TempDir()
	for _, f := range []string{archive, archive + ".cdx.json", filepath.Join(dist, "image.cdx.json")} {
		copyFile(t, f, filepath.Join(downloads, filepath.Base(f)))
	}
	for _, f := range []string{"checksums.txt", "checksums.txt.sigstore.json", "provenance.intoto.json", "provenance.sigstore.json", "kubectl-impersonate.pub"} {
		copyFile(t, filepath.Join(dist, f), filepath.Join(downloads, f))
	}
	require.NoError(t, os.WriteFile(filepath.Join(downloads, "offline-trusted-root.json"), []byte(`{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1"}`), 0o644))
	digest := strings.SplitN(ref, "@", 2)[1]

	blocks := documented(t)
	for _, b := range blocks {
		body := substitute(b.Body, version, digest, registry)
		out, ok := runBlock(t, downloads, tools, body)
		assert.True(t, ok, "%s, as documented, fails:\n%s\n%s", b.Where(), body, out)
	}
	// The statement says which commit built the archive.
	var st struct {
		Predicate struct {
			BuildDefinition struct {
				ExternalParameters struct{ Commit string } `json:"externalParameters"`
			} `json:"buildDefinition"`
		} `json:"predicate"`
	}
	b, err := os.ReadFile(filepath.Join(downloads, "provenance.intoto.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &st))
	head, err := exec.Command("git", "-C", repoRoot, "rev-parse", "HEAD").Output()
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSpace(string(head)), st.Predicate.BuildDefinition.ExternalParameters.Commit)

	checksums, provenance, image := blocks[len(blocks)-4], blocks[len(blocks)-3], blocks[len(blocks)-2]
	require.Contains(t, checksums.Body, "sha256sum")
	require.Contains(t, provenance.Body, "verify-blob-attestation")
	require.Contains(t, image.Body, "cosign verify ")
	fails := func(name string, block doctest.Block, dgst, why string, change func(dir string)) {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			entries, err := os.ReadDir(downloads)
			require.NoError(t, err)
			for _, e := range entries {
				copyFile(t, filepath.Join(downloads, e.Name()), filepath.Join(dir, e.Name()))
			}
			change(dir)
			out, ok := runBlock(t, dir, tools, substitute(block.Body, version, dgst, registry))
			assert.False(t, ok, "%s verified:\n%s", name, out)
			assert.Contains(t, out, why, "refused for the right reason")
			t.Logf("%s: %s", name, lastLine(out))
		})
	}
	flip := func(path string) {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		b[len(b)/2] ^= 1
		require.NoError(t, os.WriteFile(path, b, 0o644))
	}
	fails("an archive changed by one byte", checksums, digest, "FAILED", func(dir string) { flip(filepath.Join(dir, filepath.Base(archive))) })
	fails("the checksums file changed", checksums, digest, "invalid signature", func(dir string) {
		f, err := os.OpenFile(filepath.Join(dir, "checksums.txt"), os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, _ = fmt.Fprintf(f, "%s  evil.tar.gz\n", strings.Repeat("0", 64))
		require.NoError(t, f.Close())
	})
	fails("an archive the provenance does not name", provenance, digest, "does not match any digest in statement", func(dir string) { flip(filepath.Join(dir, filepath.Base(archive))) })
	fails("signed with another key", checksums, digest, "invalid signature", func(dir string) {
		other := t.TempDir()
		gen(other)
		cmd := exec.Command(filepath.Join(tools, "cosign"), "sign-blob", "--key", filepath.Join(other, "cosign.key"), "--tlog-upload=false",
			"--new-bundle-format", "--yes", "--bundle", "checksums.txt.sigstore.json", "checksums.txt")
		cmd.Dir, cmd.Env = dir, append(os.Environ(), "COSIGN_PASSWORD=release-test")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
	})
	fails("an image nobody signed", image, unsignedDigest(t, dist), "no signatures found", func(string) {})
}

// lastLine is the last non-empty line of out.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}

// unsignedDigest is the digest of one platform's manifest inside the
// image's index: an image of the registry that nobody signed.
func unsignedDigest(t *testing.T, dist string) string {
	t.Helper()
	var index struct {
		Manifests []struct{ Digest string } `json:"manifests"`
	}
	b, err := os.ReadFile(filepath.Join(dist, "image", "index.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &index))
	require.NotEmpty(t, index.Manifests)
	inner, err := os.ReadFile(filepath.Join(dist, "image", "blobs", "sha256", strings.TrimPrefix(index.Manifests[0].Digest, "sha256:")))
	require.NoError(t, err)
	var platforms struct {
		Manifests []struct{ Digest string } `json:"manifests"`
	}
	require.NoError(t, json.Unmarshal(inner, &platforms))
	require.NotEmpty(t, platforms.Manifests, "the image index names its platforms' images")
	return platforms.Manifests[0].Digest
}
