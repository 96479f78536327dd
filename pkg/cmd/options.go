package cmd

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/install"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/logging"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// GlobalOptions are the flags of every command.
type GlobalOptions struct {
	Verbosity int
	// Getenv and IsTerminal are stubbable for tests.
	Getenv     func(string) string
	IsTerminal func(any) bool
	// APIServer is kube-apiserver's own code, in kubectl-impersonate-apiserver
	// alone; nil in the other binaries, which hand the commands that need
	// it to that one.
	APIServer APIServerCode
	// args is the command line, for that hand-off.
	args []string
}

// APIServerCode runs kube-apiserver's own code, its JWT authenticator and
// configuration types, for claims, proxy and setup --authentication-config
// (pkg/cmd/apiserver). Linking it costs every process its package
// initialisers (component-base's metrics registry, CEL, the egress
// selector: about 10 ms), so only kubectl-impersonate-apiserver links it.
type APIServerCode interface {
	Claims(ctx context.Context, o *ClaimsOptions) error
	Proxy(ctx context.Context, o *ProxyOptions) error
	// CheckAuthConfig says in one line, with the fix, when the cluster's
	// AuthenticationConfiguration (o.AuthConfig) would refuse the tokens of
	// the entry setup writes ("" when it accepts them).
	CheckAuthConfig(o *SetupOptions) (string, error)
}

// Logger writes diagnostics to stderr at the chosen verbosity. Nothing
// logged at any level contains a token, secret or code.
func (g *GlobalOptions) Logger(w io.Writer) *logging.Logger {
	return &logging.Logger{W: w, Level: g.Verbosity}
}

func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// notifier prints one-line notices on stderr, as one printable line: a
// notice may quote an environment variable or a file of someone else's.
func notifier(w io.Writer) func(string) {
	return func(msg string) { fmt.Fprintf(w, "kubectl-impersonate: %s\n", logging.OneLine(msg, 0)) }
}

// options is what every command's options struct provides, in kubectl's
// Complete / Validate / Run shape.
type options interface {
	Complete(args []string) error
	Validate() error
	Run(ctx context.Context) error
}

// apiserverUser is an options struct whose command may need
// kube-apiserver's code: needsAPIServer returns the global options when,
// with the flags given, it does (nil when it does not).
type apiserverUser interface {
	needsAPIServer() *GlobalOptions
}

// handedOff is the exit code of the binary a command was handed to.
type handedOff int

func (h handedOff) Error() string { return fmt.Sprintf("handed off, exit code %d", int(h)) }

// handOff runs the command line in kubectl-impersonate-apiserver, next to
// this binary: on Unix it replaces this process (same streams, signals and
// environment) and returns only when that failed.
func (g *GlobalOptions) handOff(name string) error {
	path, err := install.Next(install.APIServerBinaryName)
	if err != nil {
		return fmt.Errorf("%s runs kube-apiserver's authenticator, in %s: %w", name, install.APIServerBinaryName, err)
	}
	return handedOff(install.Run(path, g.args))
}

// runE runs o's three steps as a cobra RunE, in kubectl-impersonate-apiserver
// when o needs kube-apiserver's code and this binary does not link it.
func runE(o options) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, args []string) error {
		if u, ok := o.(apiserverUser); ok {
			if g := u.needsAPIServer(); g != nil && g.APIServer == nil {
				return g.handOff(c.CommandPath())
			}
		}
		if err := o.Complete(args); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		return o.Run(c.Context())
	}
}
