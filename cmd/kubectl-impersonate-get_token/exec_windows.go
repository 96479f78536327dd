//go:build windows

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// run starts the full binary with this process's standard streams and
// returns its exit code (Windows has no exec).
func run(full string, args []string) int {
	cmd := exec.Command(full, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubectl-impersonate: running", full+":", err)
		return 1
	}
	return 0
}
