//go:build tools

// The SBOM generator, in a module of its own so that it moves nobody
// else's dependencies (goreleaser's above all): cyclonedx-gomod, which
// reads a Go binary's build information, and this module's main
// (sbom-archive), which makes one CycloneDX document per release archive
// from its binaries' documents.
package tools

import (
	_ "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod"
)
