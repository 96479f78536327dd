package settings

import (
	"fmt"
	"io"
	"maps"

	"github.com/spf13/pflag"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/credspec"
)

// ParseArgs reads get-token's flags (the arguments of a kubeconfig exec
// entry) into completed settings, and returns the -v level with them.
// warn receives what Complete would tell the user. entryEnv, when given,
// names the environment variables the exec entry sets (a caller that read
// the entry from the kubeconfig knows them).
func ParseArgs(
	args []string, getenv func(string) string, warn func(string), entryEnv ...string,
) (*AuthOptions, int, error) {
	return parseArgs(args, getenv, warn, true, entryEnv)
}

// CheckArgs reads get-token's flags as the user's own: setup checks with
// it the flags it is about to write (the exec entry's lock applies when
// get-token runs them, not to the user writing them).
func CheckArgs(args []string, getenv func(string) string) (*AuthOptions, error) {
	o, _, err := parseArgs(args, getenv, func(string) {}, false, nil)
	return o, err
}

// ParseArgsOverridden is ParseArgs with the flags the user set on the
// command line of login or logout (user, AddFlags of another AuthOptions)
// over the exec entry's: each replaces the entry's value of that flag (a
// list or key=value flag whole, not appended to), and the entry supplies
// the rest. The user's own flags are not the entry's, so the exec entry's
// lock (trust.go) does not apply to them.
func ParseArgsOverridden(args []string, user *AuthOptions, getenv func(string) string, warn func(string),
	entryEnv ...string) (*AuthOptions, error) {
	o, _, err := parseArgsWith(args, getenv, warn, true, entryEnv, user)
	return o, err
}

func parseArgs(args []string, getenv func(string) string, warn func(string), fromEntry bool,
	entryEnv []string) (*AuthOptions, int, error) {
	return parseArgsWith(args, getenv, warn, fromEntry, entryEnv, nil)
}

func parseArgsWith(args []string, getenv func(string) string, warn func(string), fromEntry bool, entryEnv []string,
	user *AuthOptions) (*AuthOptions, int, error) {
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
	if err := o.override(user); err != nil {
		return nil, 0, err
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

// override sets every flag user's command line set to user's value and
// remembers it as the user's own.
func (o *AuthOptions) override(user *AuthOptions) error {
	if user == nil || user.flags == nil {
		return nil
	}
	var err error
	user.flags.VisitAll(func(f *pflag.Flag) {
		if err != nil || !f.Changed || !user.names[f.Name] || !o.names[f.Name] {
			return
		}
		target := o.flags.Lookup(f.Name)
		switch v := f.Value.(type) {
		case pflag.SliceValue:
			err = target.Value.(pflag.SliceValue).Replace(v.GetSlice())
		default:
			if m, ok := user.maps()[f.Name]; ok {
				o.setMap(f.Name, maps.Clone(m))
			} else {
				err = target.Value.Set(f.Value.String())
			}
		}
		if err != nil {
			err = fmt.Errorf("--%s: %w", f.Name, err)
			return
		}
		target.Changed = true
		if o.userSet == nil {
			o.userSet = map[string]bool{}
		}
		o.userSet[f.Name] = true
	})
	return err
}

// setMap replaces the key=value flag name's map.
func (o *AuthOptions) setMap(name string, m map[string]string) {
	switch name {
	case credspec.FlagExtraParams:
		o.AuthRequestExtraParams = m
	case credspec.FlagRequestHeader:
		o.RequestHeaders = m
	}
}
