package credential

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/session"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/settings"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/execcred"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokensource"
)

// GetTokenOptions is the credential plugin command.
type GetTokenOptions struct {
	Auth *settings.AuthOptions
	genericiooptions.IOStreams
	global *cmdutil.GlobalOptions

	// sources builds the token source (session.NewSource, a fake in
	// tests); Run calls it, so that Complete builds nothing.
	sources     session.Sources
	request     *execcred.Request
	interactive bool
}

// NewCmdGetToken builds get-token.
func NewCmdGetToken(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmdGetToken(&GetTokenOptions{Auth: settings.NewAuthOptions(), IOStreams: streams, global: g})
}

func newCmdGetToken(o *GetTokenOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get-token",
		Short: "Print an ExecCredential for kubectl (run by kubectl from a kubeconfig exec entry)",
		Long: `get-token is what kubectl runs for every command: it prints an ExecCredential
(client.authentication.k8s.io/v1 or v1beta1, as kubectl asks in
KUBERNETES_EXEC_INFO) holding a cached token, and logs in only when the cached
token has expired and cannot be refreshed. Write its kubeconfig entry with
"kubectl impersonate setup".`,
		Example: `  # What kubectl runs (see the kubeconfig written by setup):
  kubectl-impersonate get-token --oidc-issuer-url=https://dex.example.com --oidc-client-id=kubernetes`,
		Args: cobra.NoArgs,
		RunE: o.global.RunE(o),
	}
	o.Auth.AddFlags(cmd.Flags())
	cmd.SetUsageFunc(cmdutil.GroupedUsage)
	return cmd
}

// Complete reads KUBERNETES_EXEC_INFO and the settings.
func (o *GetTokenOptions) Complete(ctx context.Context, args []string) error {
	req, err := execcred.FromEnvironment(o.global.Getenv, o.global.ParentExe)
	if err != nil {
		return err
	}
	o.request = req
	if req.FromKubectl {
		o.interactive = req.Interactive
	} else {
		o.interactive = o.global.IsTerminal(o.In)
	}
	// get-token's flags and environment are the kubeconfig exec entry's.
	o.Auth.FromExecEntry = true
	if o.sources == nil {
		o.sources = session.NewSource
	}
	return o.Auth.Complete(o.global.Getenv, cmdutil.Notifier(o.ErrOut))
}

// Validate checks the settings.
func (o *GetTokenOptions) Validate() error { return o.Auth.Validate() }

// Run prints the ExecCredential: resolve the cluster's settings, obtain
// (the cache when it can), print.
func (o *GetTokenOptions) Run(ctx context.Context) error {
	// The one gate (credspec.Admit): the cluster kubectl named must be
	// allowed, and the settings become that cluster's.
	if err := o.Auth.Admit(o.request.Cluster); err != nil {
		return err
	}
	env := o.global.SessionEnv(o.IOStreams, cmdutil.SessionMode{Interactive: o.interactive})
	r, err := session.Obtain(ctx, o.sources, o.Auth, env, tokensource.Options{ForceRefresh: o.Auth.ForceRefresh})
	if err != nil {
		return err
	}
	return execcred.WriteReply(o.Out, o.request, r.Token, r.Expiry)
}
