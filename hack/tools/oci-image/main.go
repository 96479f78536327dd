// Command oci-image builds the proxy's container image from a goreleaser
// dist folder, without a Docker daemon or a base image to pull: an empty
// ("scratch") base, one layer with the CA certificates of Debian's
// ca-certificates package and the nonroot user (65532), one layer with the
// linux binaries goreleaser built (kubectl-impersonate and
// kubectl-impersonate-apiserver), as a multi-platform OCI image index
// written to an OCI image layout (go-containerregistry's v1/layout),
// tagged with the release's version. Everything is dated at the commit, so
// the same commit gives the same digest.
//
//	oci-image -dist dist [-out dist/image] [-ca /etc/ssl/certs/ca-certificates.crt]
//	          [-manifest deploy/proxy/proxy.yaml -manifest-out dist/deploy/proxy.yaml]
//
// It prints REPOSITORY:VERSION@DIGEST and writes it to DIST/image.ref; with
// -manifest it writes the Deployment manifest naming that reference.
package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Repository is where releases publish the image.
const Repository = "ghcr.io/kubectl-impersonate/kubectl-impersonate"

// binaries go into /usr/local/bin; the entrypoint is the first.
var binaries = []string{"kubectl-impersonate-apiserver", "kubectl-impersonate"}

// nonroot is the image's user, as distroless' nonroot.
const nonroot = 65532

func main() {
	dist := flag.String("dist", "dist", "goreleaser's output folder (artifacts.json, metadata.json)")
	out := flag.String("out", "", "the OCI image layout to write (default DIST/image)")
	ca := flag.String("ca", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle (Debian's ca-certificates package)")
	manifest := flag.String("manifest", "", "a manifest whose "+Repository+" image to name by tag and digest")
	manifestOut := flag.String("manifest-out", "", "where to write it (default: in place)")
	flag.Parse()
	var err error
	if *dist, err = filepath.Abs(*dist); err != nil {
		fmt.Fprintln(os.Stderr, "oci-image:", err)
		os.Exit(1)
	}
	if *out == "" {
		*out = filepath.Join(*dist, "image")
	}
	ref, err := build(*dist, *out, *ca)
	if err == nil && *manifest != "" {
		err = rewriteManifest(*manifest, *manifestOut, ref)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "oci-image:", err)
		os.Exit(1)
	}
	fmt.Println(ref)
}

type artifact struct {
	Path   string `json:"path"`
	Goos   string `json:"goos"`
	Goarch string `json:"goarch"`
	Type   string `json:"type"`
	Extra  struct {
		Binary string `json:"Binary"`
	} `json:"extra"`
}

type metadata struct {
	Version string    `json:"version"`
	Commit  string    `json:"commit"`
	Date    time.Time `json:"date"`
}

func build(dist, out, caFile string) (string, error) {
	var meta metadata
	if err := readJSON(filepath.Join(dist, "metadata.json"), &meta); err != nil {
		return "", err
	}
	var arts []artifact
	if err := readJSON(filepath.Join(dist, "artifacts.json"), &arts); err != nil {
		return "", err
	}
	created, err := commitTime(meta, dist)
	if err != nil {
		return "", err
	}
	certs, err := os.ReadFile(caFile)
	if err != nil {
		return "", fmt.Errorf("reading the CA certificates (install Debian's ca-certificates): %w", err)
	}
	caVersion := debianVersion("ca-certificates")
	base, err := layer(created, []file{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, data: []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", nonroot, nonroot))},
		{name: "etc/group", mode: 0o644, data: []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", nonroot))},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: certs},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, dir: true, uid: nonroot},
		{name: "tmp/", mode: 0o1777, dir: true},
	})
	if err != nil {
		return "", err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	platforms := 0
	for _, arch := range []string{"amd64", "arm64"} {
		files := []file{{name: "usr/", mode: 0o755, dir: true}, {name: "usr/local/", mode: 0o755, dir: true}, {name: "usr/local/bin/", mode: 0o755, dir: true}}
		for _, b := range binaries {
			i := slices.IndexFunc(arts, func(a artifact) bool {
				return a.Type == "Binary" && a.Goos == "linux" && a.Goarch == arch && a.Extra.Binary == b
			})
			if i < 0 {
				files = nil
				break
			}
			path := arts[i].Path
			if !filepath.IsAbs(path) {
				// goreleaser's paths are relative to the project.
				path = filepath.Join(filepath.Dir(dist), path)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return "", fmt.Errorf("reading %s: %w", b, err)
			}
			files = append(files, file{name: "usr/local/bin/" + b, mode: 0o755, data: data})
		}
		if files == nil {
			continue // a one-platform build (make release-test) has no other
		}
		bin, err := layer(created, files)
		if err != nil {
			return "", err
		}
		img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
		img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
		if img, err = mutate.AppendLayers(img, base, bin); err != nil {
			return "", err
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			return "", err
		}
		cfg = cfg.DeepCopy()
		cfg.OS, cfg.Architecture = "linux", arch
		if arch == "arm64" {
			cfg.Variant = "v8"
		}
		cfg.Created = v1.Time{Time: created}
		cfg.Config = v1.Config{
			Entrypoint: []string{"/usr/local/bin/" + binaries[0]},
			User:       fmt.Sprintf("%d:%d", nonroot, nonroot),
			WorkingDir: "/home/nonroot",
			Env:        []string{"PATH=/usr/local/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt", "HOME=/home/nonroot"},
			Labels: map[string]string{
				"org.opencontainers.image.title":         "kubectl-impersonate",
				"org.opencontainers.image.description":   "the impersonating proxy of kubectl-impersonate (kubectl-impersonate-apiserver proxy)",
				"org.opencontainers.image.source":        "https://github.com/kubectl-impersonate/kubectl-impersonate",
				"org.opencontainers.image.version":       meta.Version,
				"org.opencontainers.image.revision":      meta.Commit,
				"org.opencontainers.image.created":       created.Format(time.RFC3339),
				"org.opencontainers.image.base.name":     "scratch",
				"io.kubectl-impersonate.ca-certificates": "Debian ca-certificates " + caVersion,
			},
		}
		if img, err = mutate.ConfigFile(img, cfg); err != nil {
			return "", err
		}
		platform := v1.Platform{OS: "linux", Architecture: arch, Variant: cfg.Variant}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &platform}})
		platforms++
	}
	if platforms == 0 {
		return "", fmt.Errorf("%s holds no linux/amd64 or linux/arm64 build of %s: run goreleaser first", dist, strings.Join(binaries, " and "))
	}
	if err := os.RemoveAll(out); err != nil {
		return "", err
	}
	p, err := layout.Write(out, empty.Index)
	if err != nil {
		return "", fmt.Errorf("writing the image layout: %w", err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": meta.Version})); err != nil {
		return "", fmt.Errorf("writing the image layout: %w", err)
	}
	digest, err := idx.Digest()
	if err != nil {
		return "", err
	}
	ref := fmt.Sprintf("%s:%s@%s", Repository, meta.Version, digest)
	return ref, os.WriteFile(filepath.Join(filepath.Dir(out), "image.ref"), []byte(ref+"\n"), 0o644)
}

type file struct {
	name string
	mode int64
	data []byte
	dir  bool
	uid  int
}

// layer is a tar of files owned by root (or uid), dated at created.
func layer(created time.Time, files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, ModTime: created, Uid: f.uid, Gid: f.uid, Typeflag: tar.TypeReg, Size: int64(len(f.data)), Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, tarball.WithMediaType(types.OCILayer))
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading goreleaser's %s (run goreleaser first): %w", filepath.Base(path), err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}

// commitTime is the commit's date (goreleaser's mod_timestamp), so that
// the image of a commit is the same wherever it is built.
func commitTime(meta metadata, dir string) (time.Time, error) {
	commit := meta.Commit
	if commit == "" || commit == "none" {
		commit = "HEAD" // a snapshot goreleaser could not date
	}
	cmd := exec.Command("git", "show", "-s", "--format=%ct", commit)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the date of commit %s: %w", meta.Commit, err)
	}
	var sec int64
	if _, err := fmt.Sscan(strings.TrimSpace(string(out)), &sec); err != nil {
		return time.Time{}, fmt.Errorf("reading the date of commit %s: %w", meta.Commit, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// debianVersion is an installed Debian package's version, "unknown" if
// dpkg cannot say.
func debianVersion(pkg string) string {
	out, err := exec.Command("dpkg-query", "-W", "-f=${Version}", pkg).Output()
	if err != nil || len(out) == 0 {
		return "unknown"
	}
	return string(out)
}

var imageLine = regexp.MustCompile(`(?m)^(\s*image:\s*)` + regexp.QuoteMeta(Repository) + `[:@]\S*[ \t]*$`)

// rewriteManifest names ref in the manifest's image lines.
func rewriteManifest(in, out, ref string) error {
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	if !imageLine.Match(b) {
		return fmt.Errorf("%s names no %s image", in, Repository)
	}
	b = imageLine.ReplaceAll(b, []byte("${1}"+ref))
	if out == "" {
		out = in
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(out, b, 0o644)
}
