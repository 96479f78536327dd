package credential

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"

	"github.com/golang-jwt/jwt/v5"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/settings"
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
}

// NewCmdLogin builds login.
func NewCmdLogin(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &LoginOptions{Auth: settings.NewAuthOptions(), IOStreams: streams, global: g}
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Log in now and fill the token cache, so that kubectl needs no browser later",
		Long: `login runs the login that get-token would run on a cache miss (browser,
keyboard, device code, client credentials, and the exchange when configured),
stores the token in the cache, and prints one line on stdout: who is logged in
and until when (never the token; prompts and URLs go to stderr). It takes
get-token's flags or a --profile; without them, the settings of the current
kubeconfig user's exec entry (--kubeconfig, --context), so "log in again" is
"kubectl impersonate login --force". --force logs in again even when the
cached token is still valid. Use it before a script or CI job that runs
kubectl with interactiveMode Never.`,
		Example: `  # Log in with the browser
  kubectl impersonate login --oidc-issuer-url=https://dex.example.com --oidc-client-id=kubernetes

  # Over SSH: show the URL, paste the code
  kubectl impersonate login --profile=tenant-a --grant-type=authcode-keyboard

  # Log in again as the current context's user
  kubectl impersonate login --force`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(o),
	}
	o.Auth.AddFlags(cmd.Flags())
	cmd.SetUsageFunc(cmdutil.GroupedUsage)
	cmd.Flags().BoolVar(&o.Force, "force", false, "Log in again even when a valid token is cached")
	cmd.Flags().StringVar(&o.Kubeconfig, "kubeconfig", "", "Without issuer flags or --profile: the kubeconfig whose user's exec entry gives the settings")
	cmd.Flags().StringVar(&o.Context, "context", "", "Without issuer flags or --profile: the context whose user's exec entry gives the settings (default: the current one)")
	return cmd
}

// Complete fills the settings: from the flags or profile, else from the
// kubeconfig user's exec entry.
func (o *LoginOptions) Complete(args []string) error {
	fromKubeconfig := o.Auth.IssuerURL == "" && o.Auth.Profile == "" && o.Auth.Exchange == ""
	for _, a := range o.Auth.Args() {
		if !strings.HasPrefix(a, "--force-refresh") {
			fromKubeconfig = false // other settings given: they are checked as given
		}
	}
	if fromKubeconfig {
		exec, err := cmdutil.ContextUserExec(o.Kubeconfig, o.Context)
		if err != nil {
			return err
		}
		a, err := cmdutil.SettingsOfExec(exec, o.global.Getenv)
		if errors.Is(err, cmdutil.ErrNotOurs) {
			return fmt.Errorf("give --oidc-issuer-url and --oidc-client-id, or --profile: %w", err)
		}
		if err != nil {
			return err
		}
		force := o.Auth.ForceRefresh
		o.Auth = a
		o.Auth.ForceRefresh = o.Auth.ForceRefresh || force
		return nil
	}
	return o.Auth.Complete(o.global.Getenv, cmdutil.Notifier(o.ErrOut))
}

// Validate checks the settings.
func (o *LoginOptions) Validate() error { return o.Auth.Validate() }

// Run logs in (a person runs this command, so it is interactive) and says
// who is logged in, without printing the token.
func (o *LoginOptions) Run(ctx context.Context) error {
	r, err := obtain(ctx, o.Auth, o.global, o.IOStreams, true, credential.Options{ForceLogin: o.Force, ForceRefresh: o.Auth.ForceRefresh})
	if err != nil {
		return err
	}
	who := subjectOf(r.Token)
	switch r.From {
	case credential.FromCache:
		fmt.Fprintf(o.Out, "Already logged in%s; the token is valid until %s (use --force to log in again).\n", who, r.Expiry.Local().Format(time.RFC1123))
	default:
		fmt.Fprintf(o.Out, "Logged in%s; the token is valid until %s.\n", who, r.Expiry.Local().Format(time.RFC1123))
	}
	return nil
}

// subjectOf names the user of a JWT for display; the token was verified
// when it was received.
func subjectOf(token string) string {
	claims := jwt.MapClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(token, claims); err != nil {
		return ""
	}
	for _, c := range []string{"email", "preferred_username", "sub"} {
		if v, ok := claims[c].(string); ok && v != "" {
			return " as " + v
		}
	}
	return ""
}
