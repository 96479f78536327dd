// Command sbom-archive writes the CycloneDX SBOM of a release archive or of
// the proxy's image: each Go binary in it, as an application component
// whose components are the modules that binary links, as cyclonedx-gomod
// reads them from the binary's build information (so equal to "go version
// -m"); every other file (LICENSE, the CA bundle) as a file component; the
// archive or the image, named and hashed, as the document's subject. The
// document is deterministic: no serial number, its timestamp the commit's,
// every list in a fixed order; bom-refs are prefixed with the component's
// name, since two binaries link the same modules. goreleaser runs it for
// each archive (.goreleaser.yaml, sboms), make for the image.
//
//	sbom-archive -version V -time RFC3339 OUT ARCHIVE
//	sbom-archive -version V -time RFC3339 -name REF -type container -digest sha256:HEX OUT NAME=PATH...
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
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

func main() {
	var s subject
	version := flag.String("version", "", "the release's version (the archive's and the binaries' main module's)")
	at := flag.String("time", "", "the commit's time (RFC 3339): the document's timestamp")
	flag.StringVar(&s.name, "name", "", "the subject's name (default: the archive's file name)")
	flag.StringVar(&s.kind, "type", string(cdx.ComponentTypeFile), "the subject's CycloneDX type: file (an archive) or container (the image)")
	flag.StringVar(&s.digest, "digest", "", "the subject's sha256:HEX (default: the archive's)")
	flag.Parse()
	if flag.NArg() < 2 || *version == "" || *at == "" {
		fmt.Fprintln(os.Stderr, "usage: sbom-archive -version V -time RFC3339 [-name REF -type container -digest sha256:HEX] OUT ARCHIVE|NAME=PATH...")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), flag.Args()[1:], *version, *at, s); err != nil {
		fmt.Fprintln(os.Stderr, "sbom-archive:", err)
		os.Exit(1)
	}
}

// subject is what the document describes.
type subject struct{ name, kind, digest string }

// run writes out, the document of inputs: one archive, or files by name.
func run(out string, inputs []string, version, at string, s subject) error {
	dir, err := os.MkdirTemp("", "sbom-archive-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	files, err := gather(dir, inputs, &s)
	if err != nil {
		return err
	}
	gomod, err := sibling("cyclonedx-gomod")
	if err != nil {
		return err
	}
	sum := strings.TrimPrefix(s.digest, "sha256:")
	bom := cdx.NewBOM()
	bom.SerialNumber = ""
	bom.Metadata = &cdx.Metadata{Timestamp: at, Component: &cdx.Component{
		BOMRef: "subject", Type: cdx.ComponentType(s.kind), Name: s.name, Version: version,
		Hashes: &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: sum}},
	}}
	var components []cdx.Component
	var deps []cdx.Dependency
	subjectDeps := []string{}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		path := files[name]
		c, d, tools, err := fileComponent(gomod, name, path, version, dir)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if bom.Metadata.Tools == nil {
			bom.Metadata.Tools = tools
		}
		components = append(components, c)
		deps = append(deps, d...)
		subjectDeps = append(subjectDeps, c.BOMRef)
	}
	if bom.Metadata.Tools == nil {
		return fmt.Errorf("%s holds no Go binary", strings.Join(inputs, ", "))
	}
	deps = append([]cdx.Dependency{{Ref: "subject", Dependencies: &subjectDeps}}, deps...)
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

// gather is the files the inputs name, by component name: an archive's
// (extracted into dir, named by base name), or NAME=PATH; it completes the
// subject from a lone archive.
func gather(dir string, inputs []string, s *subject) (map[string]string, error) {
	files := map[string]string{}
	for _, in := range inputs {
		if name, path, ok := strings.Cut(in, "="); ok {
			abs, err := filepath.Abs(path)
			if err != nil {
				return nil, err
			}
			files[name] = abs
			continue
		}
		sub := filepath.Join(dir, "archive-"+strconv.Itoa(len(files)))
		if err := os.Mkdir(sub, 0o700); err != nil {
			return nil, err
		}
		if err := extract(in, sub); err != nil {
			return nil, fmt.Errorf("extracting %s: %w", in, err)
		}
		entries, err := os.ReadDir(sub)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			files[e.Name()] = filepath.Join(sub, e.Name())
		}
		if s.name == "" {
			s.name = filepath.Base(in)
		}
		if s.digest == "" {
			sum, err := sha256File(in)
			if err != nil {
				return nil, err
			}
			s.digest = "sha256:" + sum
		}
	}
	if s.name == "" || s.digest == "" {
		return nil, fmt.Errorf("name the subject (-name, -digest) when no archive is given")
	}
	return files, nil
}

// fileComponent is the file at path as a component: a Go binary with the
// modules it links (cyclonedx-gomod's document of it, whose tools it
// returns), else a plain file, hashed.
func fileComponent(gomod, name, path, version, dir string) (cdx.Component, []cdx.Dependency, *cdx.ToolsChoice, error) {
	if _, err := buildinfo.ReadFile(path); err != nil {
		sum, err := sha256File(path)
		if err != nil {
			return cdx.Component{}, nil, nil, err
		}
		return cdx.Component{BOMRef: name, Type: cdx.ComponentTypeFile, Name: name,
			Hashes: &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: sum}}}, nil, nil, nil
	}
	sub, err := binaryBOM(gomod, path, version, dir)
	if err != nil {
		return cdx.Component{}, nil, nil, err
	}
	c, d, err := binaryComponent(name, path, sub)
	return c, d, sub.Metadata.Tools, err
}

// binaryBOM is cyclonedx-gomod's document of the binary at path.
func binaryBOM(gomod, path, version, dir string) (*cdx.BOM, error) {
	tmp, err := os.CreateTemp(dir, "*.cdx.json")
	if err != nil {
		return nil, err
	}
	doc := tmp.Name()
	_ = tmp.Close()
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
