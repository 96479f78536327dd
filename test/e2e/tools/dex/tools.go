//go:build tools

// Package tools pins the Dex (v2.45.1) that the end-to-end tests run as their OIDC provider.
package tools

import (
	_ "github.com/dexidp/dex/cmd/dex"
)
