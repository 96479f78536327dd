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
// be read is an error, and a locked entry is refused (fail closed). kubectl
// may be pid 1 (a container's entrypoint); a process left to init when its
// parent ended reads init's environment, which is either refused or
// smaller than kubectl's (stricter, never looser).
func readKubectlEnv() (map[string]string, error) {
	path := "/proc/" + strconv.Itoa(os.Getppid()) + "/environ"
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading kubectl's environment (%s): %w", path, err)
	}
	env := map[string]string{}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if k, v, ok := strings.Cut(string(kv), "="); ok {
			if _, seen := env[k]; !seen { // the first, as getenv reads it
				env[k] = v
			}
		}
	}
	return env, nil
}
