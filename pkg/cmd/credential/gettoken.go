package credential

import (
	"context"
	"errors"
	"fmt"
	"strings"

	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/execcred"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/login"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/settings"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/tokensource"
)

// GetTokenOptions is the credential plugin command.
type GetTokenOptions struct {
	Auth *settings.AuthOptions
	genericiooptions.IOStreams
	global *cmdutil.GlobalOptions

	request     *execcred.Request
	interactive bool
}

// NewCmdGetToken builds get-token.
func NewCmdGetToken(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &GetTokenOptions{Auth: settings.NewAuthOptions(), IOStreams: streams, global: g}
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
		RunE: cmdutil.RunE(o),
	}
	o.Auth.AddFlags(cmd.Flags())
	cmd.SetUsageFunc(cmdutil.GroupedUsage)
	return cmd
}

// Complete reads KUBERNETES_EXEC_INFO and the settings.
func (o *GetTokenOptions) Complete(args []string) error {
	req, err := execcred.ParseRequest(o.global.Getenv(execcred.EnvExecInfo))
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
	return o.Auth.Complete(o.global.Getenv, cmdutil.Notifier(o.ErrOut))
}

// Validate checks the settings.
func (o *GetTokenOptions) Validate() error { return o.Auth.Validate() }

// Run prints the ExecCredential.
func (o *GetTokenOptions) Run(ctx context.Context) error {
	if err := o.checkAllowedServer(); err != nil {
		return err
	}
	r, err := obtain(ctx, o.Auth, o.global, o.IOStreams, o.interactive, tokensource.Options{ForceRefresh: o.Auth.ForceRefresh})
	if err != nil {
		return err
	}
	return execcred.WriteReply(o.Out, o.request, r.Token, r.Expiry)
}

// obtain runs the credential use case with the settings of a command: the
// login's source, then the exchange's, both looked up by name in
// pkg/cmd/sources.go. Nothing here touches the network or the provider's
// settings until the cache misses.
func obtain(ctx context.Context, a *settings.AuthOptions, g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams, interactive bool, opts tokensource.Options) (*tokensource.Result, error) {
	return obtainWith(ctx, a, g, streams, interactive, false, opts)
}

// obtainWith is obtain; a person (login) starts a login whatever the
// cooldown.
func obtainWith(ctx context.Context, a *settings.AuthOptions, g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams, interactive, person bool, opts tokensource.Options) (*tokensource.Result, error) {
	rt, err := newSourceRuntime(a, g, streams, interactive)
	if err != nil {
		return nil, err
	}
	rt.noCooldown = person
	src, err := rt.source()
	if err != nil {
		return nil, err
	}
	r, err := src.Get(ctx, opts)
	if errors.Is(err, login.ErrInteractionRequired) {
		return nil, fmt.Errorf("no valid cached token, and the %s login needs a person, but kubectl runs this plugin non-interactively: run '%s' in a terminal first",
			login.Config{OIDC: a.OIDC}.EffectiveGrant(), loginCommand(a))
	}
	if errors.Is(err, tokensource.ErrCooldown) {
		return nil, fmt.Errorf("%w: run '%s' to log in now (--login-cooldown sets the wait)", err, loginCommand(a))
	}
	return r, err
}

func loginCommand(a *settings.AuthOptions) string {
	return strings.Join(append([]string{"kubectl", "impersonate", "login"}, quoteArgs(a.HintArgs())...), " ")
}

// checkAllowedServer applies --allowed-server to the cluster kubectl
// named, then the cluster's exec extension (a fleet's per-cluster
// audience).
func (o *GetTokenOptions) checkAllowedServer() error {
	if err := o.Auth.CheckAllowedServer(o.request.Cluster); err != nil {
		return err
	}
	return o.Auth.ForCluster(o.request.Cluster)
}
