//go:build tools

// Package tools pins the Dex (go.mod: a commit of 2026-03-03) that the end-to-end tests run as
// their OIDC provider.
package tools

import (
	_ "github.com/dexidp/dex/cmd/dex"
)
