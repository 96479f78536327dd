//go:build release

// Package release tests what users install: a goreleaser snapshot archive
// (make release-test builds it) and the Krew manifest generated for it,
// installed into a temporary Krew root with Krew v0.4.4 itself and run
// through a real kubectl's plugin lookup.
package release

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func run(t *testing.T, env []string, argv ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func TestKrewInstallFromSnapshot(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the test installs the linux/amd64 archive")
	}
	kubectl, krew, dist := os.Getenv("KI_KUBECTL"), os.Getenv("KI_KREW"), os.Getenv("KI_DIST")
	require.True(t, kubectl != "" && krew != "" && dist != "", "KI_KUBECTL, KI_KREW, KI_DIST: run through make release-test")
	archive, version := hostArchive(t, dist)
	manifest := filepath.Join(dist, "krew", "impersonate.yaml")

	root := t.TempDir()
	home := t.TempDir()
	env := []string{"HOME=" + home, "KREW_ROOT=" + root, "PATH=" + filepath.Join(root, "bin") + ":/usr/bin:/bin",
		"KUBECONFIG=" + filepath.Join(home, "config")}
	out, stderr, err := run(t, env, krew, "install", "--manifest="+manifest, "--archive="+archive)
	require.NoError(t, err, "krew install: %s%s", out, stderr)
	// What validate-krew-manifest checks when it can download: the LICENSE
	// lands in the install directory (here from the local archive).
	licenses, _ := filepath.Glob(filepath.Join(root, "store", "impersonate", "*", "LICENSE"))
	assert.Len(t, licenses, 1, "LICENSE installed")
	for _, b := range []string{"kubectl-impersonate", "kubectl-impersonate-get_token", "kubectl-impersonate-apiserver", "kubectl_complete-impersonate"} {
		installed, _ := filepath.Glob(filepath.Join(root, "store", "impersonate", "*", b))
		assert.Len(t, installed, 1, "%s installed", b)
	}

	// kubectl finds the plugin through Krew's link; the fast binary passes
	// "version" to the full binary beside it in Krew's store.
	out, stderr, err = run(t, env, kubectl, "impersonate", "version", "-o", "json")
	require.NoError(t, err, stderr)
	var v struct{ Version string }
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	assert.Equal(t, version, v.Version, "the version stamped by goreleaser")

	out, _, err = run(t, env, kubectl, "plugin", "list")
	require.NoError(t, err)
	assert.Contains(t, out, filepath.Join(root, "bin", "kubectl-impersonate"))

	// setup from a Krew install writes Krew's link, which survives upgrades.
	out, stderr, err = run(t, env, kubectl, "impersonate", "setup", "--oidc-issuer-url=https://id.example.com", "--oidc-client-id=kubernetes")
	require.NoError(t, err, stderr)
	assert.Contains(t, out, "--exec-command="+filepath.Join(root, "bin", "kubectl-impersonate"))
	assert.Contains(t, out, "--exec-arg=get-token")
	assert.NotContains(t, out, filepath.Join(root, "store"), "never the versioned store path")

	// get-token through the link: bad input reaches the full binary's
	// one-line error (the fast binary answers only valid cached tokens).
	_, stderr, err = run(t, append(env, `KUBERNETES_EXEC_INFO={"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","spec":{"interactive":false}}`),
		filepath.Join(root, "bin", "kubectl-impersonate"), "get-token", "--oidc-client-id=kubernetes")
	require.Error(t, err)
	assert.Contains(t, stderr, "--oidc-issuer-url")

	// Completion: Krew links one executable a plugin, so setup
	// --write-completion copies kubectl_complete-impersonate beside Krew's
	// link, and kubectl's own plugin completion then reaches the plugin.
	complete := filepath.Join(root, "bin", "kubectl_complete-impersonate")
	out, stderr, err = run(t, env, kubectl, "impersonate", "setup", "--write-completion")
	require.NoError(t, err, stderr)
	assert.Contains(t, out, "Wrote "+complete)
	fi, err := os.Lstat(complete)
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular(), "a copy, not a link: %s", fi.Mode())
	out, stderr, err = run(t, env, kubectl, "__complete", "impersonate", "ver")
	require.NoError(t, err, stderr)
	assert.Contains(t, candidates(out), "version", "kubectl completes the plugin's commands: %s", out)
	out, _, err = run(t, env, kubectl, "__complete", "impersonate", "whoami", "-o", "")
	require.NoError(t, err)
	assert.Contains(t, candidates(out), "jsonpath=", "and their flags' values: %s", out)
	out, _, err = run(t, env, kubectl, "impersonate", "setup", "--write-completion")
	require.NoError(t, err)
	assert.Contains(t, out, "is up to date", "again: nothing to do")

	// krew uninstall wants a local index; "krew update" would clone it from
	// GitHub, so an empty one stands in (uninstall reads only the receipt).
	require.NoError(t, os.MkdirAll(filepath.Join(root, "index", "default", ".git"), 0o755))
	out, stderr, err = run(t, env, krew, "uninstall", "impersonate")
	require.NoError(t, err, "%s%s", out, stderr)
	_, err = os.Stat(filepath.Join(root, "bin", "kubectl-impersonate"))
	assert.True(t, os.IsNotExist(err), "uninstall removes the link")
	// What uninstall leaves of completion: a regular file, not a link to
	// nothing, which answers no candidate (and no file) with the plugin gone.
	fi, err = os.Lstat(complete)
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular(), "nothing dangling: %s", fi.Mode())
	out, _, err = run(t, env, complete, "impersonate", "")
	require.NoError(t, err)
	assert.Equal(t, ":4\n", out, "no candidate, no file completion")
	out, _, err = run(t, env, kubectl, "__complete", "impersonate", "")
	require.NoError(t, err, "kubectl's completion does not break")
	assert.NotContains(t, candidates(out), "version")
}

// candidates are the words of a cobra completion answer (each line's word
// before its description; not the directive line).
func candidates(out string) []string {
	var words []string
	for _, line := range strings.Split(out, "\n") {
		if line != "" && !strings.HasPrefix(line, ":") {
			words = append(words, strings.SplitN(line, "\t", 2)[0])
		}
	}
	return words
}

// TestKrewManifestNamesTheArchives: the Krew manifest generated for the
// snapshot names every archive of it (one in make release-test, six in
// make release-test-all) under the snapshot's version, each with the
// sha256 computed here from the archive's bytes, not read from
// checksums.txt (which the manifest is generated from).
func TestKrewManifestNamesTheArchives(t *testing.T) {
	dist := os.Getenv("KI_DIST")
	require.NotEmpty(t, dist, "KI_DIST: run through make release-test")
	manifest, err := os.ReadFile(filepath.Join(dist, "krew", "impersonate.yaml"))
	require.NoError(t, err)
	archives, _ := filepath.Glob(filepath.Join(dist, "kubectl-impersonate_*_*_*.*"))
	want := map[string]string{}
	for _, a := range archives {
		if strings.HasSuffix(a, ".tar.gz") || strings.HasSuffix(a, ".zip") {
			want[filepath.Base(a)] = sha256File(t, a)
		}
	}
	require.NotEmpty(t, want, "the snapshot's archives")
	got := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^    uri: (\S+)\n    sha256: (\S+)$`).FindAllStringSubmatch(string(manifest), -1) {
		name := path.Base(m[1])
		version := strings.Split(strings.TrimPrefix(name, "kubectl-impersonate_"), "_")[0]
		assert.Equal(t, "https://github.com/kubectl-impersonate/kubectl-impersonate/releases/download/v"+version+"/"+name, m[1])
		assert.Contains(t, string(manifest), "\n  version: v"+version+"\n", "the manifest's version is the archives'")
		got[name] = m[2]
	}
	assert.Equal(t, want, got, "one entry an archive, with the archive's sha256")
	t.Logf("%d archives, each entry's sha256 recomputed", len(got))
}
