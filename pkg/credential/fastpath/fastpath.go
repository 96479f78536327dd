// Package fastpath answers kubectl's get-token from the cache in a binary
// that links no network code (cmd/kubectl-impersonate-get_token). Anything
// it cannot answer on its own, a miss, bad flags, a notice to show, goes to
// the full kubectl-impersonate binary, which runs with the same arguments
// and the same environment; this package then has written nothing.
//
// Why a second binary: Go runs the initialisers of every package a binary
// links, and a binary that can log in links net/http, crypto/tls, OIDC and
// JOSE. Measured on the project's machines, that alone costs about as much
// as the rest of a cached get-token (docs/performance.md).
package fastpath

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/settings"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/execcred"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/install"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
)

// Serve writes the ExecCredential for args (get-token's flags) to stdout
// and returns true when a valid token is cached and nothing needs saying.
// On false it has written nothing, and handoff holds environment settings
// for the full binary: when the keyring failed here (absent, locked, hung),
// the full binary is told so and does not wait for it a second time, so that
// the whole call stays within one keyring timeout.
func Serve(
	ctx context.Context, args []string, getenv func(string) string, stdout io.Writer,
) (served bool, handoff map[string]string) {
	defer tokencache.CloseKeyring()
	served, keyringErr := serve(ctx, args, getenv, stdout)
	if !served && keyringErr != nil {
		return false, map[string]string{tokencache.EnvKeyringUnavailable: keyringErr.Error()}
	}
	return served, nil
}

// serve answers from the cache; on false it also returns why the keyring
// failed, if it did (auto may have fallen back to disk all the same).
func serve(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) (bool, error) {
	said := false
	say := func(string) { said = true }
	o, verbosity, err := settings.ParseArgs(args, getenv, say)
	if err != nil || verbosity > 0 || said {
		return false, nil
	}
	if err := o.Validate(); err != nil || o.ForceRefresh {
		return false, nil // --force-refresh: the full binary refreshes
	}
	req, err := execcred.FromEnvironment(getenv, execcred.ParentExecutable)
	if err != nil {
		return false, nil
	}
	if o.Admit(req.Cluster) != nil {
		return false, nil
	}
	store, err := o.NewStore(say)
	if err != nil {
		return false, nil
	}
	r, ok, err := o.Source(store, say, nil).Cached(ctx)
	if err != nil || !ok || said {
		return false, keyringFailure(store)
	}
	var buf bytes.Buffer
	if err := execcred.WriteReply(&buf, req, r.Token, r.Expiry); err != nil {
		return false, nil
	}
	_, err = stdout.Write(buf.Bytes())
	return err == nil, nil
}

// keyringFailure is why the store's keyring failed in this process, if it
// did: the keyring records its first failure, whichever call met it.
func keyringFailure(s tokencache.Store) error {
	if f, ok := s.(interface{ Failure() error }); ok {
		return f.Failure()
	}
	return nil
}

// Dispatch decides what the fast binary was asked. Run by its own name
// (kubeconfig entries, "kubectl impersonate get-token" via kubectl's
// plugin lookup), args are get-token's flags. Run by another name - Krew
// links kubectl-impersonate to this binary - it is the whole plugin:
// "get-token ARGS" is answered here, anything else goes to the full binary
// unchanged (full is then true).
func Dispatch(argv0 string, args []string) (getTokenArgs []string, full bool, err error) {
	name := filepath.Base(argv0)
	if runtime.GOOS == "windows" {
		name = strings.TrimSuffix(strings.ToLower(name), ".exe")
	}
	switch {
	case name == install.FastBinaryName:
		return args, false, nil
	case name == install.APIServerBinaryName:
		// The full binary hands commands to that name: answering them by
		// handing them back would loop.
		return nil, false,
			errors.New(strconv.Quote(argv0) + " is the fast get-token binary under the name of " +
				install.APIServerBinaryName + ": install the plugin's binaries side by " +
				"side, each under its own name")
	case len(args) > 0 && args[0] == "get-token":
		return args[1:], false, nil
	}
	return nil, true, nil
}
