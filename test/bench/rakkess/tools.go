//go:build tools

// Package tools pins rakkess (github.com/corneliusweig/rakkess v0.5.1, its
// newest release), the peer hack/bench-inspect.sh measures access -n and -A
// against: one SelfSubjectAccessReview per resource and verb.
package tools

import (
	_ "github.com/corneliusweig/rakkess"
)
