// Package cmd holds the commands of kubectl-impersonate, one file each, as
// options structs with Complete, Validate and Run.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/execcred"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/tokencache"
)

// GlobalOptions are the flags of every command.
type GlobalOptions struct {
	Verbosity int
	// Getenv and IsTerminal are stubbable for tests.
	Getenv     func(string) string
	IsTerminal func(any) bool
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

// NewRootCmd builds the command tree.
func NewRootCmd(streams genericiooptions.IOStreams) *cobra.Command {
	return newRootCmd(streams, "")
}

// newRootCmd builds the tree; with only set, just that subcommand. kubectl
// runs get-token on every call, and building the other commands' flags
// costs allocations (and so fresh pages) that get-token has no use for.
func newRootCmd(streams genericiooptions.IOStreams, only string) *cobra.Command {
	g := &GlobalOptions{Getenv: os.Getenv, IsTerminal: isTerminal}
	root := &cobra.Command{
		Use:   "kubectl-impersonate",
		Short: "Log in to Kubernetes with OpenID Connect, and act as another user where allowed",
		Long: `kubectl-impersonate is a kubectl credential plugin: kubectl runs its get-token
command from a kubeconfig exec entry, and it logs you in to your OpenID Connect
provider (browser, keyboard, device code or client credentials) and caches the
token in the OS keyring.

Start with "kubectl impersonate setup --help".`,
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl impersonate",
		},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.PersistentFlags().IntVarP(&g.Verbosity, "v", "v", 0, "Log level for diagnostics on stderr (1: steps, 2: HTTP-level detail); tokens are never logged")

	if only == "get-token" {
		root.AddCommand(NewCmdGetToken(g, streams))
		root.CompletionOptions.DisableDefaultCmd = true
		return root
	}
	root.AddCommand(
		NewCmdGetToken(g, streams),
		NewCmdLogin(g, streams),
		NewCmdSetup(g, streams),
		NewCmdLogout(g, streams),
		NewCmdCloudSigma(g, streams),
		NewCmdWhoAmI(g, streams),
		NewCmdClaims(g, streams),
		NewCmdGroups(g, streams),
		NewCmdAccess(g, streams),
		NewCmdList(g, streams),
		NewCmdWhy(g, streams),
		NewCmdWhoCan(g, streams),
		NewCmdProxy(g, streams),
		NewCmdVersion(streams),
	)
	return root
}

// notifier prints one-line notices on stderr, as one printable line: a
// notice may quote an environment variable or a file of someone else's.
func notifier(w io.Writer) func(string) {
	return func(msg string) { fmt.Fprintf(w, "kubectl-impersonate: %s\n", logging.OneLine(msg, 0)) }
}

// errOnlyGetToken refuses every command but get-token under kubectl's
// credential plugin protocol: a kuberc allowlist pins the command of an
// exec entry, not its arguments, so an entry must not reach login, setup or
// the proxy (client-go always sets KUBERNETES_EXEC_INFO, after the entry's
// own env, so an entry cannot unset it).
var errOnlyGetToken = errors.New("kubectl runs this plugin from a kubeconfig exec entry (" + execcred.EnvExecInfo + " is set): only get-token may run that way; fix the entry's args")

// Execute runs the command line and returns the exit code. main prints
// nothing itself: errors are reported here, once, on stderr.
func Execute(ctx context.Context, args []string, streams genericiooptions.IOStreams) int {
	defer tokencache.CloseKeyring()
	only := ""
	if len(args) > 0 && args[0] == "get-token" {
		only = "get-token"
	}
	root := newRootCmd(streams, only)
	root.SetArgs(args)
	err := errOnlyGetToken
	if c, _, ferr := root.Find(args); os.Getenv(execcred.EnvExecInfo) == "" || (ferr == nil && c.Name() == "get-token") {
		err = root.ExecuteContext(ctx)
	}
	if err != nil {
		// One printable line: errors may quote a hostile file or answer.
		fmt.Fprintf(streams.ErrOut, "kubectl-impersonate: %s\n", logging.OneLine(err.Error(), 0))
		return 1
	}
	return 0
}

// options is what every command's options struct provides, in kubectl's
// Complete / Validate / Run shape.
type options interface {
	Complete() error
	Validate() error
	Run(ctx context.Context) error
}

// runE runs o's three steps as a cobra RunE.
func runE(o options) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, _ []string) error {
		if err := o.Complete(); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		return o.Run(c.Context())
	}
}
