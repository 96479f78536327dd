// Command sbom-archive writes the CycloneDX SBOM of one release archive:
// each Go binary in it, as an application component whose components are
// the modules that binary links, as cyclonedx-gomod reads them from the
// binary's build information (so equal to "go version -m"); the archive
// itself, named and hashed, as the document's subject. The document is
// deterministic: no serial number, its timestamp the commit's, every list
// in a fixed order; bom-refs are prefixed with the binary's name, since two
// binaries link the same modules. goreleaser runs it for each archive
// (.goreleaser.yaml, sboms).
//
//	sbom-archive -version V -time RFC3339 ARCHIVE OUT
package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

func main() {
	version := flag.String("version", "", "the release's version (the archive's and the binaries' main module's)")
	at := flag.String("time", "", "the commit's time (RFC 3339): the document's timestamp")
	flag.Parse()
	if flag.NArg() != 2 || *version == "" || *at == "" {
		fmt.Fprintln(os.Stderr, "usage: sbom-archive -version V -time RFC3339 ARCHIVE OUT")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), flag.Arg(1), *version, *at); err != nil {
		fmt.Fprintln(os.Stderr, "sbom-archive:", err)
		os.Exit(1)
	}
}

func run(archive, out, version, at string) error {
	dir, err := os.MkdirTemp("", "sbom-archive-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := extract(archive, dir); err != nil {
		return fmt.Errorf("extracting %s: %w", archive, err)
	}
	gomod, err := sibling("cyclonedx-gomod")
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	sum, err := sha256File(archive)
	if err != nil {
		return err
	}
	bom := cdx.NewBOM()
	bom.SerialNumber = ""
	bom.Metadata = &cdx.Metadata{Timestamp: at, Component: &cdx.Component{
		BOMRef: "archive", Type: cdx.ComponentTypeFile, Name: filepath.Base(archive), Version: version,
		Hashes: &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: sum}},
	}}
	var components []cdx.Component
	var deps []cdx.Dependency
	archiveDeps := []string{}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if !e.Type().IsRegular() {
			continue
		}
		if _, err := buildinfo.ReadFile(path); err != nil {
			continue // LICENSE, README.md
		}
		sub, err := binaryBOM(gomod, path, version, dir)
		if err != nil {
			return fmt.Errorf("%s: %w", e.Name(), err)
		}
		if bom.Metadata.Tools == nil {
			bom.Metadata.Tools = sub.Metadata.Tools
		}
		c, d, err := binaryComponent(e.Name(), path, sub)
		if err != nil {
			return err
		}
		components = append(components, c)
		deps = append(deps, d...)
		archiveDeps = append(archiveDeps, c.BOMRef)
	}
	if len(components) == 0 {
		return fmt.Errorf("%s holds no Go binary", archive)
	}
	sort.Slice(components, func(i, j int) bool { return components[i].Name < components[j].Name })
	sort.Strings(archiveDeps)
	deps = append([]cdx.Dependency{{Ref: "archive", Dependencies: &archiveDeps}}, deps...)
	bom.Components, bom.Dependencies = &components, &deps
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	enc := cdx.NewBOMEncoder(f, cdx.BOMFileFormatJSON)
	enc.SetPretty(true)
	if err := enc.Encode(bom); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// binaryBOM is cyclonedx-gomod's document of the binary at path.
func binaryBOM(gomod, path, version, dir string) (*cdx.BOM, error) {
	doc := path + ".cdx.json"
	cmd := exec.Command(gomod, "bin", "-json", "-noserial", "-notimestamp", "-version", version, "-output", doc, path)
	cmd.Dir, cmd.Stderr = dir, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("cyclonedx-gomod: %w", err)
	}
	f, err := os.Open(doc)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	bom := new(cdx.BOM)
	if err := cdx.NewBOMDecoder(f, cdx.BOMFileFormatJSON).Decode(bom); err != nil {
		return nil, fmt.Errorf("reading cyclonedx-gomod's document: %w", err)
	}
	if bom.Metadata == nil || bom.Metadata.Component == nil {
		return nil, fmt.Errorf("cyclonedx-gomod's document names no binary")
	}
	return bom, nil
}

// binaryComponent is the binary named name as a component of the archive:
// cyclonedx-gomod's main component, named after the executable and
// hashed, whose components are the modules it links; and the dependency
// graph, every bom-ref prefixed with name.
func binaryComponent(name, path string, sub *cdx.BOM) (cdx.Component, []cdx.Dependency, error) {
	prefix := name + ":"
	c := *sub.Metadata.Component
	main := c.BOMRef
	c.BOMRef, c.Name = prefix+main, name
	c.Description = "built from the Go module " + sub.Metadata.Component.Name
	sum, err := sha256File(path)
	if err != nil {
		return c, nil, err
	}
	c.Hashes = &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: sum}}
	var mods []cdx.Component
	if sub.Components != nil {
		for _, m := range *sub.Components {
			m.BOMRef = prefix + m.BOMRef
			mods = append(mods, m)
		}
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].BOMRef < mods[j].BOMRef })
	c.Components = nil // a binary that links no module has none
	if len(mods) > 0 {
		c.Components = &mods
	}
	var deps []cdx.Dependency
	if sub.Dependencies != nil {
		for _, d := range *sub.Dependencies {
			d.Ref = prefix + d.Ref
			if d.Dependencies != nil {
				on := make([]string, len(*d.Dependencies))
				for i, r := range *d.Dependencies {
					on[i] = prefix + r
				}
				sort.Strings(on)
				d.Dependencies = &on
			}
			deps = append(deps, d)
		}
	}
	sort.Slice(deps, func(i, j int) bool { return deps[i].Ref < deps[j].Ref })
	return c, deps, nil
}

// extract writes the archive's regular files, by base name, into dir.
func extract(archive, dir string) error {
	if strings.HasSuffix(archive, ".zip") {
		z, err := zip.OpenReader(archive)
		if err != nil {
			return err
		}
		defer func() { _ = z.Close() }()
		for _, f := range z.File {
			if !f.Mode().IsRegular() {
				continue
			}
			r, err := f.Open()
			if err != nil {
				return err
			}
			err = write(filepath.Join(dir, filepath.Base(f.Name)), r)
			_ = r.Close()
			if err != nil {
				return err
			}
		}
		return nil
	}
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if err := write(filepath.Join(dir, filepath.Base(h.Name)), tr); err != nil {
			return err
		}
	}
}

func write(path string, r io.Reader) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, io.LimitReader(r, 1<<30)); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func sha256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// sibling is the tool called name beside this one.
func sibling(name string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	p := filepath.Join(filepath.Dir(self), name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s is not beside %s: build the tools with hack/tools/build.sh", name, self)
	}
	return p, nil
}
