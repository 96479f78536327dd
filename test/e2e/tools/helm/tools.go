//go:build tools

// Package tools pins the Helm (v3.22.0) whose install the end-to-end tests
// record (kubectl impersonate record -- helm install ...).
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
