//go:build linux

package settings

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// readKubectlEnv is the environment kubectl started with: the parent's
// (/proc/PPID/environ, its environment at exec), or the grandparent's when
// the parent is the fast get-token binary handing a call to this one. The
// exec entry's env is what this process has on top of it (client-go's
// exec: kubectl's environment, then the entry's).
func readKubectlEnv() (map[string]string, bool) {
	pid := os.Getppid()
	if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err == nil && filepath.Base(exe) == fastBinaryName {
		pid = ppidOf(pid)
	}
	if pid <= 0 {
		return nil, false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil || len(b) == 0 {
		return nil, false
	}
	env := map[string]string{}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if k, v, ok := strings.Cut(string(kv), "="); ok {
			env[k] = v
		}
	}
	return env, true
}

// ppidOf reads the parent of pid from /proc/PID/stat (after the command
// name, which may hold spaces and parentheses).
func ppidOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// openNonBlocking opens path for reading without waiting on a FIFO or a
// terminal.
func openNonBlocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
