// Command oci-serve serves an OCI registry on 127.0.0.1 (go-containerregistry's
// in-memory one) holding the proxy's image from its OCI layout, so that
// cosign can sign and verify it by digest where no registry is reachable
// (make release-test). It prints HOST:PORT/REPOSITORY:TAG@DIGEST and serves
// until its standard input closes or it is stopped.
//
//	oci-serve -layout dist/image -repo kubectl-impersonate/kubectl-impersonate -tag VERSION
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

func main() {
	dir := flag.String("layout", "", "the image's OCI layout (hack/tools/oci-image's output)")
	repo := flag.String("repo", "kubectl-impersonate/kubectl-impersonate", "the repository to push it to")
	tag := flag.String("tag", "", "its tag")
	flag.Parse()
	if err := run(*dir, *repo, *tag); err != nil {
		fmt.Fprintln(os.Stderr, "oci-serve:", err)
		os.Exit(1)
	}
}

func run(dir, repo, tag string) error {
	if dir == "" || tag == "" {
		return fmt.Errorf("usage: oci-serve -layout DIR -repo REPOSITORY -tag TAG")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	defer func() { _ = srv.Close() }()
	p, err := layout.FromPath(dir)
	if err != nil {
		return err
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	if len(im.Manifests) != 1 {
		return fmt.Errorf("%s holds %d images, not one", dir, len(im.Manifests))
	}
	image, err := idx.ImageIndex(im.Manifests[0].Digest)
	if err != nil {
		return err
	}
	ref, err := name.NewTag(l.Addr().String()+"/"+repo+":"+tag, name.Insecure)
	if err != nil {
		return err
	}
	if err := remote.WriteIndex(ref, image); err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	digest, err := image.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s@%s\n", ref, digest)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); stop() }()
	<-ctx.Done()
	return nil
}
