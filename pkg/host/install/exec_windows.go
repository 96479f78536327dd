//go:build windows

package install

import (
	"errors"
	"os"
	"os/exec"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
)

// Run starts the binary at path with args, the environment env and this
// process's standard streams, and returns its exit code (Windows has no
// exec).
func Run(path string, args, env []string) int {
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		logging.Noticef(os.Stderr, "running %s: %v", path, err)
		return 1
	}
	return 0
}
