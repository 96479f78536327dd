//go:build darwin

package execcred

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// ParentExecutable is the parent process's executable, read once per
// process: the exec path of its arguments (sysctl kern.procargs2, a
// process of the same user), else its command name (kern.proc.pid,
// readable by all, 16 bytes at most); "" when neither can be read.
var ParentExecutable = sync.OnceValue(func() string {
	if path, _, err := parentArgs(); err == nil && path != "" {
		return path
	}
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", os.Getppid())
	if err != nil {
		return ""
	}
	return unix.ByteSliceToString(kp.Proc.P_comm[:])
})

// ParentEnviron is the parent process's environment at its exec
// (kern.procargs2): kubectl's, as Linux reads /proc/PPID/environ.
func ParentEnviron() ([]string, error) {
	_, env, err := parentArgs()
	return env, err
}

// parentArgs parses kern.procargs2 of the parent: argc (int32), the exec
// path, NUL padding, argc arguments, then the environment up to an empty
// string (Apple's own strings follow).
func parentArgs() (string, []string, error) {
	b, err := unix.SysctlRaw("kern.procargs2", os.Getppid())
	if err != nil {
		return "", nil, err
	}
	return parseProcArgs(b)
}
