//go:build linux

package settings

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// readKubectlEnv is the environment kubectl started with: the parent's
// (/proc/PPID/environ, its environment at exec). The fast get-token binary
// hands a call to this one by exec (cmd/kubectl-impersonate-get_token), so
// the parent is kubectl either way. The exec entry's env is what this
// process has on top of it (client-go's exec: kubectl's environment, then
// the entry's).
func readKubectlEnv() (map[string]string, bool) {
	pid := os.Getppid()
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
