package settings

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/install"
)

// ExecEntry is what this plugin reads of a kubeconfig user's exec entry
// (client-go's ExecConfig, without linking it into the fast binary).
type ExecEntry struct {
	Command string
	Args    []string
	// Env is the entry's env list, in its order.
	Env []EnvVar
}

// EnvVar is one variable an exec entry sets.
type EnvVar struct{ Name, Value string }

// ErrNotOurs says an exec entry runs something else than this plugin's
// get-token (or that the user has no exec entry).
var ErrNotOurs = errors.New("the current kubeconfig user does not run kubectl-impersonate (its exec entry runs " +
	"something else, or it has none)")

// ParseExecEntry reads the get-token settings of an exec entry that runs
// this plugin (the fast binary, or the full one's get-token) as get-token
// reads them when kubectl runs it: the entry's environment over getenv's,
// and the entry's lock. user, when not nil, holds the flags a person set
// on login's or logout's command line: each replaces the entry's value of
// that flag (ParseArgsOverridden). It is the one parse of an exec entry
// read from a kubeconfig.
func ParseExecEntry(e *ExecEntry, user *AuthOptions, getenv func(string) string) (*AuthOptions, error) {
	if e == nil {
		return nil, ErrNotOurs
	}
	args := e.Args
	switch filepath.Base(strings.TrimSuffix(e.Command, ".exe")) {
	case install.FastBinaryName:
	case install.FullBinaryName:
		if len(args) == 0 || args[0] != "get-token" {
			return nil, ErrNotOurs
		}
		args = args[1:]
	default:
		return nil, ErrNotOurs
	}
	env := map[string]string{}
	names := []string{} // not nil: the entry's env is known
	for _, v := range e.Env {
		env[v.Name] = v.Value
		names = append(names, v.Name)
	}
	lookup := func(name string) string {
		if v, ok := env[name]; ok {
			return v
		}
		return getenv(name)
	}
	o, err := ParseArgsOverridden(args, user, lookup, func(string) {}, names...)
	if err != nil {
		return nil, fmt.Errorf("reading the exec entry's flags: %w", err)
	}
	return o, nil
}
