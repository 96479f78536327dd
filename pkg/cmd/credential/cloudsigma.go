package credential

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/session"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/settings"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/login"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/credspec"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokensource"
)

// NewCmdCloudSigma groups the CloudSigma commands.
func NewCmdCloudSigma(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cloudsigma",
		Short: "CloudSigma impersonation: check which account a token acts as",
		Long: `CloudSigma's service-provider impersonation gives a service identity a token
that acts as a given user, so that resources land and are billed in that user's
account: client credentials at Keycloak, a UMA ticket (RPT), then POST
https://direct.{region}.cloudsigma.com/service_provider/api/v1/user/impersonate.
get-token and login run it with --impersonate-user-email and
--cloudsigma-region; these commands check its outcome. See docs/exchange.md.`,
	}
	cmd.AddCommand(newCmdCloudSigmaWhoAmI(g, streams))
	return cmd
}

// CloudSigmaWhoAmIOptions is "cloudsigma whoami".
type CloudSigmaWhoAmIOptions struct {
	Auth   *settings.AuthOptions
	Output *cmdutil.OutputFlags
	genericiooptions.IOStreams
	global *cmdutil.GlobalOptions

	sources session.Sources
}

func newCmdCloudSigmaWhoAmI(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &CloudSigmaWhoAmIOptions{Auth: settings.NewAuthOptions(), IOStreams: streams, global: g}
	o.Auth.Exchange = credspec.ExchangeCloudSigma
	cmd := &cobra.Command{
		Use:   "whoami",
		Short: "Obtain (or reuse) the impersonated token and show the account it acts on (GET /api/2.0/profile/)",
		Long: `whoami obtains the impersonated token through the three steps (or reuses the
cached one), then asks CloudSigma's profile endpoint which account it acts on,
and prints the account's email and UUID. The token is never printed.`,
		Example: `  CLOUDSIGMA_CLIENT_ID=robot CLOUDSIGMA_CLIENT_SECRET=... \
    kubectl impersonate cloudsigma whoami --cloudsigma-region=zrh --impersonate-user-email=alice@example.com`,
		Args: cobra.NoArgs,
		RunE: g.RunE(o),
	}
	o.Auth.AddFlags(cmd.Flags())
	cmd.SetUsageFunc(cmdutil.GroupedUsage)
	o.Output = cmdutil.NewOutputFlags(cmd.Flags(), "text")
	return cmd
}

// Complete fills the settings.
func (o *CloudSigmaWhoAmIOptions) Complete(ctx context.Context, args []string) error {
	if o.sources == nil {
		o.sources = session.NewSource
	}
	return o.Auth.Complete(o.global.Getenv, cmdutil.Notifier(o.ErrOut))
}

// Validate checks the settings.
func (o *CloudSigmaWhoAmIOptions) Validate() error {
	if o.Auth.Exchange != credspec.ExchangeCloudSigma {
		return fmt.Errorf("cloudsigma whoami works with --%s=%s only", credspec.FlagExchange,
			credspec.ExchangeCloudSigma)
	}
	if err := o.Output.Validate(); err != nil {
		return err
	}
	return o.Auth.Validate()
}

type cloudSigmaIdentity struct {
	Region    string `json:"region"`
	UserEmail string `json:"userEmail"`
	Account   string `json:"accountEmail"`
	UUID      string `json:"accountUUID,omitempty"`
	Token     string `json:"tokenSource"`
}

// Run obtains the token and reads the profile it acts on.
func (o *CloudSigmaWhoAmIOptions) Run(ctx context.Context) error {
	r, err := session.Obtain(ctx, o.sources, o.Auth, o.global.SessionEnv(o.IOStreams, cmdutil.SessionMode{}),
		tokensource.Options{})
	if err != nil {
		return err
	}
	cs := session.CloudSigma(o.Auth)
	if cs.HTTPClient, err = login.NewHTTPClient(session.HTTPOptions(o.Auth)); err != nil {
		return err
	}
	p, err := cs.GetProfile(ctx, r.Token)
	if err != nil {
		return err
	}
	id := cloudSigmaIdentity{Region: cs.Region, UserEmail: cs.UserEmail, Account: p.Email, UUID: p.UUID, Token: r.From}
	if err := o.Output.Print(o.Out, id, func(w io.Writer) {
		fmt.Fprintf(w, "The token acts as %s in %s (account %s; token from %s).\n", logging.Printable(p.Email),
			logging.Printable(cs.Region), logging.Printable(p.UUID), r.From)
	}); err != nil {
		return err
	}
	if !strings.EqualFold(p.Email, cs.UserEmail) {
		return errors.New("the impersonated token acts on another account than --impersonate-user-email: do not use " +
			"it; report this to CloudSigma")
	}
	return nil
}
