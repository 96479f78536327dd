// Package cmd is kubectl-impersonate's command registry. The commands live
// in packages by concern, as kubectl's do, each an options struct with
// Complete(ctx, args), Validate and Run: credential (get-token, login, logout,
// status, cloudsigma), setup, identity (whoami, claims, groups), authz
// (access, list, why, who-can), privilege (record, least-privilege), serve
// (proxy); util holds what they share (global options, the kubeconfig and
// output flags, the Complete/Validate/Run runner and the hand-off to
// kubectl-impersonate-apiserver, whose code is apiserver's).
package cmd

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/authz"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/credential"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/identity"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/privilege"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/serve"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/setup"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/sudo"
	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/execcred"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/kubecode"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
)

// NewRootCmd builds the command tree.
func NewRootCmd(streams genericiooptions.IOStreams) *cobra.Command {
	return newRootCmd(streams, cmdutil.NewGlobalOptions(nil, nil))
}

// command is one entry of the registry: its name and aliases (so that a
// command line finds its command without building the others) and its
// constructor. TestRegistryNames keeps the names equal to the commands'.
type command struct {
	names []string
	build func(*cmdutil.GlobalOptions, genericiooptions.IOStreams) *cobra.Command
}

// commands is the registry, in the order of the help.
var commands = []command{
	{[]string{"get-token"}, credential.NewCmdGetToken},
	{[]string{"login"}, credential.NewCmdLogin},
	{[]string{"setup"}, setup.NewCmdSetup},
	{[]string{"logout"}, credential.NewCmdLogout},
	{[]string{"status", "sessions"}, credential.NewCmdStatus},
	{[]string{"cloudsigma"}, credential.NewCmdCloudSigma},
	{[]string{"whoami"}, identity.NewCmdWhoAmI},
	{[]string{"claims"}, identity.NewCmdClaims},
	{[]string{"groups"}, identity.NewCmdGroups},
	{[]string{"access", "can-i-matrix"}, authz.NewCmdAccess},
	{[]string{"list"}, authz.NewCmdList},
	{[]string{"why"}, authz.NewCmdWhy},
	{[]string{"who-can"}, authz.NewCmdWhoCan},
	{[]string{"record"}, privilege.NewCmdRecord},
	{[]string{"least-privilege"}, privilege.NewCmdLeastPrivilege},
	{[]string{"proxy"}, serve.NewCmdProxy},
	{[]string{"sudo-controller"}, serve.NewCmdSudoController},
	{[]string{"sudo"}, sudo.NewCmdSudo},
	{[]string{"version"},
		func(_ *cmdutil.GlobalOptions, s genericiooptions.IOStreams) *cobra.Command { return NewCmdVersion(s) }},
}

// newRootCmd builds the tree. When args name a command, only that one is
// built: building the others' flags costs allocations (and so fresh pages)
// on every run, get-token's above all, which kubectl runs on every call.
// Help, completion and unknown commands get the whole tree.
func newRootCmd(streams genericiooptions.IOStreams, g *cmdutil.GlobalOptions) *cobra.Command {
	args := g.Args()
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
	root.PersistentFlags().IntVarP(&g.Verbosity, "v", "v", 0, "Log level for diagnostics on stderr (1: steps, 2: "+
		"HTTP-level detail); tokens are never logged")
	if len(args) > 0 {
		for _, c := range commands {
			if slices.Contains(c.names, args[0]) {
				root.AddCommand(c.build(g, streams))
				root.CompletionOptions.DisableDefaultCmd = true
				return root
			}
		}
	}
	for _, c := range commands {
		root.AddCommand(c.build(g, streams))
	}
	if len(args) > 0 && strings.HasPrefix(args[0], cobra.ShellCompRequestCmd) {
		// A TAB (kubectl_complete-impersonate): the flags' known values.
		cmdutil.RegisterCompletions(root, g.Getenv)
	}
	return root
}

// errOnlyGetToken refuses every command but get-token under the
// credential plugin protocol: a kuberc allowlist pins the command of an
// exec entry, not its arguments, so an entry must not reach login, setup or
// the proxy (client-go and the Python client always set
// KUBERNETES_EXEC_INFO, after the entry's own env, so an entry cannot unset
// it; the JavaScript client sets none, and is known by its runtime:
// execcred.RunByClient).
var errOnlyGetToken = errors.New("a Kubernetes client runs this plugin from a kubeconfig exec entry (" +
	execcred.EnvExecInfo + " is set, or the client is the JavaScript one): only get-token may run that way; fix the " +
	"entry's args")

// Execute runs the command line and returns the exit code. main prints
// nothing itself: errors are reported here, once, on stderr. code is
// kube-apiserver's code where this binary links it (pkg/server/kubecode/linked),
// else nil: the commands that need it are handed to the binary that does.
func Execute(ctx context.Context, args []string, streams genericiooptions.IOStreams, code kubecode.Code) int {
	defer tokencache.CloseKeyring()
	// Every line is escaped where it is printed; the streams escape what
	// a caller forgot (docs/security.md's predicate), and keep JSON valid.
	out, errOut := logging.NewSafeWriter(streams.Out), logging.NewSafeWriter(streams.ErrOut)
	defer func() { _, _ = out.Flush(), errOut.Flush() }()
	streams.Out, streams.ErrOut = out, errOut
	// The Kubernetes libraries' log lines (client-go's "refreshing
	// credentials" quotes a kubeconfig's exec command) go there too.
	cmdutil.RouteKlog(errOut, true)
	g := cmdutil.NewGlobalOptions(code, args)
	root := newRootCmd(streams, g)
	root.SetArgs(args)
	err := errOnlyGetToken
	c, _, ferr := root.Find(args)
	if !execcred.RunByClient(g.Getenv, g.ParentExe) || (ferr == nil && c.Name() == "get-token") {
		err = root.ExecuteContext(ctx)
	}
	var handed cmdutil.ExitCode
	if errors.As(err, &handed) {
		return int(handed)
	}
	if err != nil {
		// One printable line: errors may quote a hostile file or answer.
		logging.Notice(streams.ErrOut, err.Error())
		return 1
	}
	return 0
}
