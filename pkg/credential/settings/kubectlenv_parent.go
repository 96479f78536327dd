//go:build darwin || windows

package settings

import (
	"fmt"
	"strings"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/execcred"
)

// readKubectlEnv is kubectl's environment: the parent's (macOS: its
// environment at exec, kern.procargs2; Windows: its environment block,
// read from its PEB). The fast get-token binary hands a call to this one
// by exec on macOS and by running it as a child that the parent waits on
// on Windows, with the same environment either way. A parent that cannot
// be read is an error, and a locked entry is refused (fail closed).
func readKubectlEnv() (map[string]string, error) {
	environ, err := execcred.ParentEnviron()
	if err != nil {
		return nil, fmt.Errorf("reading kubectl's environment: %w", err)
	}
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			if _, seen := env[k]; !seen { // the first, as getenv reads it
				env[k] = v
			}
		}
	}
	return env, nil
}
