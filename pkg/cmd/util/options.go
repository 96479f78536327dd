package util

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/session"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/environ"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/execcred"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/install"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/kubecode"
)

// GlobalOptions are the flags of every command.
type GlobalOptions struct {
	Verbosity int
	// Getenv and IsTerminal are stubbable for tests.
	Getenv     func(string) string
	IsTerminal func(any) bool
	// ParentExe is the parent process's executable (execcred.FromEnvironment).
	ParentExe func() string
	// Environ is the process's environment, for a child the command runs
	// (record's command).
	Environ func() []string
	// OpenTerminal opens the controlling terminal (SessionEnv).
	OpenTerminal func() (io.Writer, error)
	// APIServer is kube-apiserver's own code (pkg/server/kubecode), injected by
	// kubectl-impersonate-apiserver alone; nil in the other binaries, which
	// hand the commands that need it to that one (RunE).
	APIServer kubecode.Code
	// args is the command line, for that hand-off.
	args []string
}

// NewGlobalOptions are the options of a run of args, with kube-apiserver's
// code where this binary links it (else nil).
func NewGlobalOptions(code kubecode.Code, args []string) *GlobalOptions {
	return &GlobalOptions{Getenv: environ.Getenv, IsTerminal: IsTerminalFile, ParentExe: execcred.ParentExecutable,
		Environ: environ.Environ, OpenTerminal: OpenControllingTerminal, APIServer: code, args: args}
}

// Env reads the environment with Getenv as it is when called (tests
// replace Getenv after the commands are built): what the commands hand
// down as a getenv parameter.
func (g *GlobalOptions) Env(key string) string { return g.Getenv(key) }

// Args is the command line of the run (without the program's name).
func (g *GlobalOptions) Args() []string { return g.args }

// Logger writes diagnostics to stderr at the chosen verbosity. Nothing
// logged at any level contains a token, secret or code.
func (g *GlobalOptions) Logger(w io.Writer) *logging.Logger {
	return &logging.Logger{W: w, Level: g.Verbosity}
}

// IsTerminalFile says whether v is a terminal (under the escaping writer
// of the command's streams).
func IsTerminalFile(v any) bool {
	f, ok := logging.Raw(v).(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Notifier prints one-line notices on stderr, as one printable line: a
// notice may quote an environment variable or a file of someone else's.
func Notifier(w io.Writer) func(string) {
	return func(msg string) { logging.Notice(w, msg) }
}

// Options is what every command's options struct provides, in kubectl's
// Complete / Validate / Run shape; Validate (Validator) and ValidateFlags
// (FlagValidator) are optional steps.
type Options interface {
	Complete(ctx context.Context, args []string) error
	Run(ctx context.Context) error
}

// FlagValidator checks the flags alone, before Complete reads anything:
// a bad -o is refused before the kubeconfig is read, as kubectl refuses
// it before any request.
type FlagValidator interface {
	ValidateFlags() error
}

// Validator checks what Complete resolved.
type Validator interface {
	Validate() error
}

// APIServerUser is an options struct whose command may need
// kube-apiserver's code: NeedsAPIServer says whether, with the flags
// given, it does.
type APIServerUser interface {
	NeedsAPIServer() bool
}

// ExitCode ends a command with that exit code and no message: its answer
// is already written (why's "no" exits 1, as kubectl auth can-i), or it
// was the exit code of the binary the command was handed to.
type ExitCode int

func (h ExitCode) Error() string { return fmt.Sprintf("exit code %d", int(h)) }

// handOff runs the command line in kubectl-impersonate-apiserver, next to
// this binary: on Unix it replaces this process (same streams, signals and
// environment) and returns only when that failed.
func (g *GlobalOptions) handOff(name string) error {
	path, err := install.Next(install.APIServerBinaryName)
	if err != nil {
		return fmt.Errorf("%s runs kube-apiserver's authenticator, in %s: %w", name, install.APIServerBinaryName, err)
	}
	return ExitCode(install.Run(path, g.args, environ.Environ()))
}

// RunE runs o's three steps as a cobra RunE, in kubectl-impersonate-apiserver
// when o needs kube-apiserver's code and this binary does not link it.
func (g *GlobalOptions) RunE(o Options) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, args []string) error {
		if u, ok := o.(APIServerUser); ok && u.NeedsAPIServer() && g.APIServer == nil {
			return g.handOff(c.CommandPath())
		}
		if v, ok := o.(FlagValidator); ok {
			if err := v.ValidateFlags(); err != nil {
				return err
			}
		}
		ctx := c.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		if d := commandTimeout(c); d > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
			defer watchdog(d, c.ErrOrStderr())()
		}
		if err := o.Complete(ctx, args); err != nil {
			return err
		}
		if v, ok := o.(Validator); ok {
			if err := v.Validate(); err != nil {
				return err
			}
		}
		err := o.Run(ctx)
		if err != nil && ctx.Err() == context.DeadlineExceeded {
			return fmt.Errorf("the command did not end within its --%s (%s): %w", FlagCommandTimeout, commandTimeout(c),
				err)
		}
		return err
	}
}

// FlagCommandTimeout bounds a whole command that talks to API servers
// (KubeFlags): every request, page and credential plugin in it.
const FlagCommandTimeout = "command-timeout"

// DefaultCommandTimeout is --command-timeout's default.
const DefaultCommandTimeout = 5 * time.Minute

// commandTimeout is c's --command-timeout, 0 without one.
func commandTimeout(c *cobra.Command) time.Duration {
	f := c.Flags().Lookup(FlagCommandTimeout)
	if f == nil {
		return 0
	}
	d, err := time.ParseDuration(f.Value.String())
	if err != nil {
		return 0
	}
	return d
}

// watchdogGrace is how long past its deadline a command may take to
// return on its own before the watchdog ends the process.
const watchdogGrace = 2 * time.Second

// exit ends the process when a command outlives its deadline (tests
// replace it).
var exit = os.Exit

// watchdog ends the process watchdogGrace after d, with one line on
// errOut, unless the returned stop is called first: what the context
// cannot stop (a credential plugin client-go runs, which takes no
// context) does not hold the command past its deadline.
func watchdog(d time.Duration, errOut io.Writer) (stop func()) {
	t := time.AfterFunc(d+watchdogGrace, func() {
		logging.Noticef(errOut, "the command did not end within its --%s (%s): a credential plugin or the API server "+
			"did not answer; stopped", FlagCommandTimeout, d)
		exit(1)
	})
	return func() { t.Stop() }
}

// SessionMode is how a command obtains a token: Interactive, a person may
// be asked (on the controlling terminal too when stderr is not one);
// Person, a person asked for this login (the login command).
type SessionMode struct {
	Interactive, Person bool
}

// SessionEnv is what obtaining a token may do with the command's streams
// in mode, and what it knows of the process (session.Process: the command
// line, the environment, the default kubeconfig).
func (g *GlobalOptions) SessionEnv(streams genericiooptions.IOStreams, mode SessionMode) session.Env {
	errOut, stderrIsTerminal := streams.ErrOut, g.IsTerminal(streams.ErrOut)
	if mode.Interactive && !stderrIsTerminal && g.OpenTerminal != nil {
		errOut = &alsoToTerminal{w: errOut, open: g.OpenTerminal}
	}
	return session.Env{In: streams.In, ErrOut: errOut, Interactive: mode.Interactive, Person: mode.Person,
		StderrIsTerminal: stderrIsTerminal, Verbosity: g.Verbosity,
		Process: session.Process{Args: g.args, Getenv: g.Getenv, Kubeconfig: DefaultKubeconfig}}
}
