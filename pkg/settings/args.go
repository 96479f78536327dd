package settings

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"
)

// ParseArgs reads get-token's flags (the arguments of a kubeconfig exec
// entry) into completed settings, and returns the -v level with them.
// warn receives what Complete would tell the user. entryEnv, when given,
// names the environment variables the exec entry sets (a caller that read
// the entry from the kubeconfig knows them).
func ParseArgs(args []string, getenv func(string) string, warn func(string), entryEnv ...string) (*AuthOptions, int, error) {
	return parseArgs(args, getenv, warn, true, entryEnv)
}

// CheckArgs reads get-token's flags as the user's own: setup checks with
// it the flags it is about to write (the exec entry's lock applies when
// get-token runs them, not to the user writing them).
func CheckArgs(args []string, getenv func(string) string) (*AuthOptions, error) {
	o, _, err := parseArgs(args, getenv, func(string) {}, false, nil)
	return o, err
}

func parseArgs(args []string, getenv func(string) string, warn func(string), fromEntry bool, entryEnv []string) (*AuthOptions, int, error) {
	fs := pflag.NewFlagSet("get-token", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o := NewAuthOptions()
	o.AddFlags(fs)
	verbosity := fs.IntP("v", "v", 0, "")
	if err := fs.Parse(args); err != nil {
		return nil, 0, err
	}
	if fs.NArg() > 0 {
		return nil, 0, fmt.Errorf("get-token takes no arguments, got %q", fs.Args())
	}
	o.FromExecEntry = fromEntry
	if entryEnv != nil {
		o.EntryEnv = entryEnv
	}
	if err := o.Complete(getenv, warn); err != nil {
		return nil, 0, err
	}
	return o, *verbosity, nil
}
