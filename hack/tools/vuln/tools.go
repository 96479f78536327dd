//go:build tools

// The vulnerability check's tools, in a module of their own so that they
// move nobody else's dependencies: govulncheck, and indexdb, which writes
// the database govulncheck reads (index/db.json, index/modules.json,
// ID/*.json) from golang.org/x/vulndb's OSV files, pinned here, since the
// public vuln.go.dev is out of reach where make test runs.
package tools

import (
	_ "golang.org/x/vuln/cmd/govulncheck"
	_ "golang.org/x/vulndb/cmd/indexdb"
)
