package credential

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/session"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/settings"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokensource"
)

// LoginOptions is the login command: get-token's flow, run by a person.
type LoginOptions struct {
	Auth  *settings.AuthOptions
	Force bool
	// Kubeconfig and Context select the kubeconfig user whose exec entry
	// gives the settings when no issuer flag or profile does.
	Kubeconfig, Context string
	genericiooptions.IOStreams
	global *cmdutil.GlobalOptions

	// sources builds the token source (session.NewSource, a fake in tests).
	sources session.Sources
}

// NewCmdLogin builds login.
func NewCmdLogin(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmdLogin(&LoginOptions{Auth: settings.NewAuthOptions(), IOStreams: streams, global: g})
}

func newCmdLogin(o *LoginOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Log in now and fill the token cache, so that kubectl needs no browser later",
		Long: `login runs the login that get-token would run on a cache miss (browser,
keyboard, device code, client credentials, and the exchange when configured),
stores the token in the cache, and prints one line on stdout: who is logged in
and until when (never the token; prompts and URLs go to stderr). Its settings
are those of the current kubeconfig user's exec entry (--kubeconfig,
--context), so "log in again" is "kubectl impersonate login --force"; any of
get-token's flags given replaces the entry's value of that flag and the entry
supplies the rest. Flags that name a provider (--oidc-issuer-url, --profile,
--exchange) without --kubeconfig or --context are used alone, as get-token
would. --force logs in again even when the
cached token is still valid. Use it before a script or CI job that runs
kubectl with interactiveMode Never.`,
		Example: `  # Log in with the browser
  kubectl impersonate login --oidc-issuer-url=https://dex.example.com --oidc-client-id=kubernetes

  # Over SSH: show the URL, paste the code
  kubectl impersonate login --profile=tenant-a --grant-type=authcode-keyboard

  # Log in again as the current context's user
  kubectl impersonate login --force

  # The same, over SSH: the entry's settings, but no browser is opened
  kubectl impersonate login --context=prod --force --skip-open-browser`,
		Args: cobra.NoArgs,
		RunE: o.global.RunE(o),
	}
	o.Auth.AddFlags(cmd.Flags())
	cmd.SetUsageFunc(cmdutil.GroupedUsage)
	cmd.Flags().BoolVar(&o.Force, "force", false, "Log in again even when a valid token is cached")
	cmd.Flags().StringVar(&o.Kubeconfig, "kubeconfig", "", "The kubeconfig whose user's exec entry gives the "+
		"settings the flags do not")
	cmd.Flags().StringVar(&o.Context, "context", "", "The context whose user's exec entry gives the settings the "+
		"flags do not (default: the current one)")
	return cmd
}

// Complete fills the settings: from the flags or profile when they name a
// provider, else from the kubeconfig user's exec entry with the flags over
// it.
func (o *LoginOptions) Complete(ctx context.Context, args []string) error {
	a, err := settingsOfContext(o.Auth, o.Kubeconfig, o.Context, o.global.Getenv, cmdutil.Notifier(o.ErrOut))
	if err != nil {
		return err
	}
	o.Auth = a
	if o.sources == nil {
		o.sources = session.NewSource
	}
	return nil
}

// NamesProvider tells whether the command line chose the provider itself
// (an issuer, a profile or an exchange): then the exec entry is not read.
func NamesProvider(a *settings.AuthOptions) bool {
	return a.IssuerURL != "" || a.Profile != "" || a.Exchange != ""
}

// settingsOfContext completes a, the settings of login's command line: as
// given when they name a provider and no --kubeconfig or --context was
// given; else the settings of the context's session (its user's exec
// entry, for its cluster), with every flag the command line set replacing
// the entry's value of it.
func settingsOfContext(a *settings.AuthOptions, kubeconfig, context string, getenv func(string) string,
	warn func(string)) (*settings.AuthOptions, error) {
	if NamesProvider(a) && kubeconfig == "" && context == "" {
		return a, a.Complete(getenv, warn)
	}
	raw, err := cmdutil.LoadKubeconfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	s, err := session.Current(raw, session.Selection{Context: context}, a, getenv)
	if errors.Is(err, session.ErrNotOurs) {
		return nil, fmt.Errorf("give --oidc-issuer-url and --oidc-client-id, or --profile: %w", err)
	}
	if err != nil {
		return nil, err
	}
	return s.Auth, nil
}

// Validate checks the settings.
func (o *LoginOptions) Validate() error { return o.Auth.Validate() }

// Run logs in (a person runs this command, so it is interactive) and says
// who is logged in, without printing the token.
func (o *LoginOptions) Run(ctx context.Context) error {
	env := o.global.SessionEnv(o.IOStreams, cmdutil.SessionMode{Interactive: true, Person: true})
	r, err := session.Obtain(ctx, o.sources, o.Auth, env,
		tokensource.Options{ForceLogin: o.Force, ForceRefresh: o.Auth.ForceRefresh})
	if err != nil {
		return err
	}
	who := subjectOf(r.Token)
	switch r.From {
	case tokensource.FromCache:
		fmt.Fprintf(o.Out, "Already logged in%s; the token is valid until %s (use --force to log in again).\n", who,
			r.Expiry.Local().Format(time.RFC1123))
	default:
		fmt.Fprintf(o.Out, "Logged in%s; the token is valid until %s.\n", who, r.Expiry.Local().Format(time.RFC1123))
	}
	return nil
}

// subjectOf is " as USER" for the token's user (session.Subject), "" for
// an opaque token; the token was verified when it was received.
func subjectOf(token string) string {
	if who := session.Subject(token); who != "" {
		return " as " + logging.Printable(who)
	}
	return ""
}
