package inspect

import (
	"context"
	"errors"
	"fmt"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/safefile"
	"io"
	"strings"

	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// ClaimsOptions is the claims command.
type ClaimsOptions struct {
	Kube       *cmdutil.KubeFlags
	TokenFile  string
	Output     *cmdutil.OutputFlags
	Compare    bool
	AuthConfig string
	// OIDC are kube-apiserver's --oidc-* flags.
	OIDC       cmdutil.OIDCFlags
	SkipVerify bool
	// Server answers --compare (SelfSubjectReview); Complete builds it, and
	// ReadToken reads the token, from the flags.
	Server    WhoAmIClient
	ReadToken func(ctx context.Context) (string, error)
	genericiooptions.IOStreams
	global *cmdutil.GlobalOptions
}

// NewCmdClaims builds claims.
func NewCmdClaims(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ClaimsOptions{IOStreams: streams, global: g}
	cmd := &cobra.Command{
		Use:   "claims",
		Short: "Decode the current token, verify its signature, and predict the Kubernetes identity its claims map to",
		Long: `claims decodes the current kubeconfig user's token (from kubectl-impersonate's cache,
without printing the token), or --token-file (- for stdin), and predicts the username,
uid, groups and extra the API server derives from it with kube-apiserver's own JWT
authenticator (k8s.io/apiserver): from a structured --authentication-config file
(apiserver.config.k8s.io/v1 or v1beta1, validated as kube-apiserver validates it; a
file the API server would refuse is an error), or from kube-apiserver's legacy
--oidc-* flags (accepted under those names), including the "<issuer>#" default prefix.

The signature is verified only against an issuer you name (the configuration's, or
--oidc-issuer-url), with its CA; the token's own iss is never trusted for that.
With --compare it asks the API server (SelfSubjectReview) and lists every
difference, a refusal (401) included.`,
		Example: `  kubectl impersonate claims --oidc-issuer-url=https://dex.example.com --oidc-username-claim=email --oidc-groups-claim=groups
  kubectl impersonate claims --authentication-config=/etc/kubernetes/auth-config.yaml --compare
  kubectl impersonate claims --token-file=- < token.jwt -o json`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(o),
	}
	o.Kube = cmdutil.NewKubeFlags(cmd.Flags())
	o.Kube.RegisterCompletions(cmd)
	f := cmd.Flags()
	f.StringVar(&o.TokenFile, "token-file", "", "Read the token from this file (- for stdin) instead of the cache")
	o.Output = cmdutil.NewOutputFlags(f, "a table")
	f.BoolVar(&o.Compare, "compare", false, "Ask the API server who the token is and list the differences")
	f.StringVar(&o.AuthConfig, "authentication-config", "", "kube-apiserver's AuthenticationConfiguration file (v1 or v1beta1) to predict with")
	o.OIDC.AddFlags(f, map[string]string{"client-id": "oidc-client-id", "issuer-certificate-authority": "oidc-certificate-authority",
		"username-claim": "oidc-username-claim", "username-prefix": "oidc-username-prefix", "groups-claim": "oidc-groups-claim", "groups-prefix": "oidc-groups-prefix"}, streams.ErrOut)
	f.BoolVar(&o.SkipVerify, "skip-signature-check", false, "Do not fetch the issuer's keys (the prediction says the signature is not verified)")
	return cmd
}

// Complete routes the Kubernetes libraries' logs to stderr at -v 2 and
// above, and nowhere otherwise.
func (o *ClaimsOptions) Complete(args []string) error {
	cmdutil.RouteKlog(o.ErrOut, o.global.Verbosity >= 2)
	o.ReadToken = o.token
	if o.Compare {
		c, err := o.Kube.APIClient()
		if err != nil {
			return err
		}
		o.Server = c
	}
	return nil
}

// Validate checks the flags.
func (o *ClaimsOptions) Validate() error {
	if o.AuthConfig != "" && len(o.OIDC.Given()) > 0 {
		return errors.New("give either --authentication-config or the legacy --oidc-* rules, not both")
	}
	return o.Output.Validate()
}

// token is the token claims decodes: --token-file's (- for stdin), or
// the current kubeconfig user's from this plugin's cache.
func (o *ClaimsOptions) token(ctx context.Context) (string, error) {
	switch o.TokenFile {
	case "":
		tok, _, err := o.Kube.CachedToken(ctx, o.global.Getenv)
		if errors.Is(err, cmdutil.ErrNotOurs) {
			return "", fmt.Errorf("%w: give the token with --token-file", err)
		}
		return tok, err
	case "-":
		b, err := io.ReadAll(io.LimitReader(o.In, 1<<20))
		return strings.TrimSpace(string(b)), err
	default:
		b, _, err := safefile.ReadRegular("--token-file", o.TokenFile, 1<<20, safefile.ReadOptions{})
		return strings.TrimSpace(string(b)), err
	}
}

// Run runs kube-apiserver's authenticator (kubectl-impersonate-apiserver).
func (o *ClaimsOptions) Run(ctx context.Context) error {
	return o.global.APIServer.(ClaimsRunner).Claims(ctx, o)
}

// ClaimsRunner runs claims with kube-apiserver's authenticator
// (pkg/cmd/apiserver.Code).
type ClaimsRunner interface {
	Claims(ctx context.Context, o *ClaimsOptions) error
}

// NeedsAPIServer: claims always runs kube-apiserver's authenticator.
func (o *ClaimsOptions) NeedsAPIServer() *cmdutil.GlobalOptions { return o.global }
