//go:build tools

// Sigstore's cosign, in a module of its own (its graph is large and would
// move goreleaser's): it signs the checksums file, the provenance and the
// proxy's image, and docs/install.md verifies them with it.
package tools

import (
	_ "github.com/sigstore/cosign/v2/cmd/cosign"
)
