//go:build !windows

package main

import (
	"fmt"
	"os"
	"syscall"
)

// run replaces this process with the full binary: kubectl sees one process,
// with the same stdin, stdout, stderr and environment.
func run(full string, args []string) int {
	err := syscall.Exec(full, append([]string{full}, args...), os.Environ())
	fmt.Fprintln(os.Stderr, "kubectl-impersonate: running", full+":", err)
	return 1
}
