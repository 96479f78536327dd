//go:build linux

package settings

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// readKubectlEnv is the environment kubectl started with: the parent's
// (/proc/PPID/environ, its environment at exec). The fast get-token binary
// hands a call to this one by exec (cmd/kubectl-impersonate-get_token), so
// the parent is kubectl either way. The exec entry's env is what this
// process has on top of it (client-go's exec: kubectl's environment, then
// the entry's). An empty file is an empty environment (env -i kubectl …):
// every variable this process has is then the entry's. A file that cannot
// be read is an error, and a locked entry is refused (fail closed).
func readKubectlEnv() (map[string]string, error) {
	pid := os.Getppid()
	path := "/proc/" + strconv.Itoa(pid) + "/environ"
	b, err := os.ReadFile(path)
	if err != nil || pid <= 1 {
		return nil, fmt.Errorf("reading kubectl's environment (%s): %w", path, cmpErr(err))
	}
	env := map[string]string{}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if k, v, ok := strings.Cut(string(kv), "="); ok {
			env[k] = v
		}
	}
	return env, nil
}

// cmpErr is err, or why a parent of pid 1 is not kubectl: this process was
// left to init when its parent ended.
func cmpErr(err error) error {
	if err != nil {
		return err
	}
	return errNoParent
}
