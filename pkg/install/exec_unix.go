//go:build !windows

package install

import (
	"fmt"
	"os"
	"syscall"
)

// Run replaces this process with the binary at path, run with args: the
// caller (kubectl, a shell, a container runtime) sees one process, with the
// same stdin, stdout, stderr, environment and signals. It returns only when
// the exec failed.
func Run(path string, args []string) int {
	err := syscall.Exec(path, append([]string{path}, args...), os.Environ())
	fmt.Fprintln(os.Stderr, "kubectl-impersonate: running", path+":", err)
	return 1
}
