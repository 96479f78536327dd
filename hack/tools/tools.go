//go:build tools

// Package tools pins the release and lint tools; hack/tools/build.sh
// builds them into ~/.cache/kubectl-impersonate-tools with `go build`
// (go install mod@version needs version lists the module proxy here may
// refuse).
package tools

import (
	_ "github.com/goreleaser/goreleaser/v2"
	_ "golang.org/x/tools/cmd/goimports"
	_ "honnef.co/go/tools/cmd/staticcheck"
	_ "sigs.k8s.io/krew/cmd/krew"
	_ "sigs.k8s.io/krew/cmd/validate-krew-manifest"
)
