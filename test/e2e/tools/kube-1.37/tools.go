//go:build tools

// Package tools pins the kube-apiserver 1.37 and kubectl that the end-to-end tests run.
// It is never compiled: build.sh builds the main packages it names.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
