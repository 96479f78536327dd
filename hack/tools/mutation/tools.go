//go:build tools

// Package mutation pins the mutation tester make mutation runs
// (hack/mutation.sh builds it from this module).
package mutation

import _ "github.com/go-gremlins/gremlins/cmd/gremlins"
