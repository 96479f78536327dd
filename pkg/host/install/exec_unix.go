//go:build !windows

package install

import (
	"fmt"
	"os"
	"syscall"
)

// Run replaces this process with the binary at path, run with args and the
// environment env (the process's, environ.Environ): the caller (kubectl, a
// shell, a container runtime) sees one process, with the same stdin,
// stdout, stderr and signals. It returns only when the exec failed.
func Run(path string, args, env []string) int {
	err := syscall.Exec(path, append([]string{path}, args...), env)
	fmt.Fprintln(os.Stderr, "kubectl-impersonate: running", path+":", err)
	return 1
}
