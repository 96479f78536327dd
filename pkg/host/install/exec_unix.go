//go:build !windows

package install

import (
	"os"
	"syscall"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
)

// Run replaces this process with the binary at path, run with args and the
// environment env (the process's, environ.Environ): the caller (kubectl, a
// shell, a container runtime) sees one process, with the same stdin,
// stdout, stderr and signals. It returns only when the exec failed.
func Run(path string, args, env []string) int {
	err := syscall.Exec(path, append([]string{path}, args...), env)
	logging.Noticef(os.Stderr, "running %s: %v", path, err)
	return 1
}
