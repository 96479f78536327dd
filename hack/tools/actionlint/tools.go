//go:build tools

// Package actionlint pins the GitHub Actions workflow checker make lint
// runs (hack/actionlint.sh builds it from this module).
package actionlint

import _ "github.com/rhysd/actionlint/cmd/actionlint"
