//go:build windows

package execcred

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/install"
)

// TestFastBinaryExe: the name skipped above is the fast binary's.
func TestFastBinaryExe(t *testing.T) {
	assert.Equal(t, install.FastBinaryName+".exe", FastBinaryExe)
}
