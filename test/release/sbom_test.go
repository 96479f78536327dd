//go:build release

package release

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sbom is the part of a CycloneDX document the checks read.
type sbom struct {
	Metadata struct {
		Timestamp string `json:"timestamp"`
		Component struct {
			Name   string `json:"name"`
			Hashes []struct {
				Alg     string `json:"alg"`
				Content string `json:"content"`
			} `json:"hashes"`
		} `json:"component"`
	} `json:"metadata"`
	SerialNumber string `json:"serialNumber"`
	Components   []struct {
		Type       string `json:"type"`
		Name       string `json:"name"`
		Components []struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"components"`
	} `json:"components"`
}

// linkedModules are the modules "go version -m" says the binary links, as
// path@version (a replaced module as its replacement).
func linkedModules(t *testing.T, binary string) []string {
	t.Helper()
	out, err := exec.Command("go", "version", "-m", binary).Output()
	require.NoError(t, err, binary)
	var mods []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "dep":
			mods = append(mods, f[1]+"@"+f[2])
		case len(f) >= 3 && f[0] == "=>":
			mods[len(mods)-1] = f[1] + "@" + f[2]
		}
	}
	slices.Sort(mods)
	return mods
}

// extractAll writes a tar.gz archive's files into dir.
func extractAll(t *testing.T, archive, dir string) {
	t.Helper()
	extract(t, archive, dir, func(*tar.Header) bool { return true })
}

// extract writes the files of the tar.gz archive that keep selects into
// dir (by their base names, each once); it returns their base names.
func extract(t *testing.T, archive, dir string, keep func(*tar.Header) bool) []string {
	t.Helper()
	f, err := os.Open(archive)
	require.NoError(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		require.NoError(t, err)
		if !keep(h) {
			continue
		}
		require.NoError(t, os.MkdirAll(dir, 0o755))
		out, err := os.OpenFile(filepath.Join(dir, filepath.Base(h.Name)), os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
		require.NoError(t, err, "one %s", h.Name)
		_, err = io.Copy(out, tr)
		require.NoError(t, err)
		require.NoError(t, out.Close())
		names = append(names, filepath.Base(h.Name))
	}
}

// TestSBOMsListWhatBinariesLink: each archive's SBOM names the archive by
// its sha256 and lists, for each of its four binaries, exactly the modules
// "go version -m" of that binary lists; the image's SBOM does the same for
// the binaries it holds, read out of the image's layers for each platform. Both are deterministic documents (no serial,
// the commit's date).
func TestSBOMsListWhatBinariesLink(t *testing.T) {
	dist := os.Getenv("KI_DIST")
	require.NotEmpty(t, dist, "KI_DIST: run through make release-test")
	archive, _ := hostArchive(t, dist)
	var doc sbom
	b, err := os.ReadFile(archive + ".cdx.json")
	require.NoError(t, err, "the archive's SBOM")
	require.NoError(t, json.Unmarshal(b, &doc))
	assert.Empty(t, doc.SerialNumber, "no random serial")
	assert.NotEmpty(t, doc.Metadata.Timestamp, "dated (at the commit)")
	assert.Equal(t, filepath.Base(archive), doc.Metadata.Component.Name)
	require.Len(t, doc.Metadata.Component.Hashes, 1)
	assert.Equal(t, sha256File(t, archive), doc.Metadata.Component.Hashes[0].Content, "the SBOM names its archive")

	dir := t.TempDir()
	extractAll(t, archive, dir)
	binaries := 0
	for _, c := range doc.Components {
		if c.Type != "application" {
			continue
		}
		binaries++
		var listed []string
		for _, m := range c.Components {
			listed = append(listed, m.Name+"@"+m.Version)
		}
		slices.Sort(listed)
		assert.Equal(t, linkedModules(t, filepath.Join(dir, c.Name)), listed, "%s: the SBOM lists what go version -m lists", c.Name)
	}
	assert.Equal(t, 4, binaries, "the archive's four binaries")

	var image sbom
	b, err = os.ReadFile(filepath.Join(dist, "image.cdx.json"))
	require.NoError(t, err, "the image's SBOM")
	require.NoError(t, json.Unmarshal(b, &image))
	ref, err := os.ReadFile(filepath.Join(dist, "image.ref"))
	require.NoError(t, err)
	assert.Equal(t, "sha256:"+image.Metadata.Component.Hashes[0].Content, strings.SplitN(strings.TrimSpace(string(ref)), "@", 2)[1], "the SBOM names the image by digest")
	// The binaries are read out of the image itself, each platform's (one
	// in make release-test's host snapshot, two in a release).
	inImage, platforms := imageBinaries(t, filepath.Join(dist, "image"))
	checked := 0
	for _, c := range image.Components {
		if c.Type != "application" {
			continue
		}
		path, ok := inImage[c.Name] // linux/ARCH/NAME
		if !assert.True(t, ok, "the image's SBOM lists %s, which the image does not hold (it holds %v)", c.Name, keys(inImage)) {
			continue
		}
		var listed []string
		for _, m := range c.Components {
			listed = append(listed, m.Name+"@"+m.Version)
		}
		slices.Sort(listed)
		assert.Equal(t, linkedModules(t, path), listed, "image %s", c.Name)
		checked++
	}
	assert.Equal(t, len(inImage), checked, "every binary of the image is in its SBOM")
	assert.Equal(t, 2*platforms, checked, "the image's two binaries on each of its %d platforms", platforms)
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// imageBinaries writes the executables of every platform's image in the
// OCI layout dir to a temporary directory; it returns their paths by
// PLATFORM/NAME (linux/amd64/kubectl-impersonate-apiserver), and the
// number of platforms.
func imageBinaries(t *testing.T, layout string) (map[string]string, int) {
	t.Helper()
	type descriptor struct {
		MediaType string `json:"mediaType"`
		Digest    string `json:"digest"`
		Platform  *struct {
			OS           string `json:"os"`
			Architecture string `json:"architecture"`
		} `json:"platform"`
	}
	var doc struct {
		Manifests []descriptor `json:"manifests"`
		Layers    []descriptor `json:"layers"`
	}
	blob := func(digest string) string {
		return filepath.Join(layout, "blobs", "sha256", strings.TrimPrefix(digest, "sha256:"))
	}
	read := func(path string, into any) {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, into))
	}
	read(filepath.Join(layout, "index.json"), &doc)
	require.Len(t, doc.Manifests, 1, "one tagged index")
	read(blob(doc.Manifests[0].Digest), &doc)
	out := map[string]string{}
	dir := t.TempDir()
	for _, m := range doc.Manifests {
		require.NotNil(t, m.Platform, "each image names its platform")
		platform := m.Platform.OS + "/" + m.Platform.Architecture
		var manifest struct {
			Layers []descriptor `json:"layers"`
		}
		read(blob(m.Digest), &manifest)
		for _, l := range manifest.Layers {
			require.Contains(t, l.MediaType, "tar+gzip", "a gzipped layer")
			executables := func(h *tar.Header) bool { return h.Typeflag == tar.TypeReg && h.Mode&0o111 != 0 }
			for _, name := range extract(t, blob(l.Digest), filepath.Join(dir, platform), executables) {
				out[platform+"/"+name] = filepath.Join(dir, platform, name)
			}
		}
	}
	return out, len(doc.Manifests)
}
