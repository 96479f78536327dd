package identity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/inspect"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/kubeapi"
	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/session"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/safefile"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/jwtclaims"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/kubecode"
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
	Server    inspect.WhoAmIClient
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
		RunE: g.RunE(o),
	}
	o.Kube = cmdutil.NewKubeFlags(cmd.Flags(), g.Env)
	o.Kube.RegisterCompletions(cmd)
	f := cmd.Flags()
	f.StringVar(&o.TokenFile, "token-file", "", "Read the token from this file (- for stdin) instead of the cache")
	o.Output = cmdutil.NewOutputFlags(f, "a table")
	f.BoolVar(&o.Compare, "compare", false, "Ask the API server who the token is and list the differences")
	f.StringVar(&o.AuthConfig, "authentication-config", "", "kube-apiserver's AuthenticationConfiguration file (v1 "+
		"or v1beta1) to predict with")
	o.OIDC.AddFlags(f,
		map[string]string{"client-id": "oidc-client-id", "issuer-certificate-authority": "oidc-certificate-authority",
			"username-claim": "oidc-username-claim", "username-prefix": "oidc-username-prefix",
			"groups-claim": "oidc-groups-claim", "groups-prefix": "oidc-groups-prefix"}, streams.ErrOut)
	f.BoolVar(&o.SkipVerify, "skip-signature-check", false, "Do not fetch the issuer's keys (the prediction says the "+
		"signature is not verified)")
	return cmd
}

// Complete routes the Kubernetes libraries' logs to stderr at -v 2 and
// above, and nowhere otherwise.
func (o *ClaimsOptions) Complete(ctx context.Context, args []string) error {
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
		tok, _, err := gatedToken(ctx, o.Kube, o.global.Getenv)
		if errors.Is(err, session.ErrNotOurs) {
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

// ClaimsResult is what claims prints with -o json|yaml.
type ClaimsResult struct {
	jwtclaims.Token
	Expires           time.Time `json:"expires,omitzero"`
	SignatureVerified bool      `json:"signatureVerified"`
	// Signature says how the signature was checked, or why not.
	Signature   string            `json:"signature"`
	Rules       string            `json:"rules"`
	Notes       []string          `json:"notes,omitempty"`
	Predicted   kubecode.Identity `json:"predicted"`
	Server      *WhoAmIResult     `json:"server,omitempty"`
	Differences []string          `json:"differences,omitempty"`
}

// Run predicts with kube-apiserver's authenticator (the seam's; in
// kubectl-impersonate-apiserver), compares with the API server when asked,
// and prints.
func (o *ClaimsOptions) Run(ctx context.Context) error {
	raw, err := o.ReadToken(ctx)
	if err != nil {
		return err
	}
	tok, err := jwtclaims.Decode(raw)
	if err != nil {
		return err
	}
	oidc, err := o.OIDC.Values()
	if err != nil {
		return err
	}
	p, err := o.global.APIServer.Predict(ctx,
		kubecode.PredictRequest{Token: raw,
			Authentication: kubecode.Authentication{ConfigFile: o.AuthConfig, OIDC: oidc},
			Trusted:        o.AuthConfig != "" || o.OIDC.IssuerURL != "", SkipVerify: o.SkipVerify})
	if err != nil {
		return err
	}
	res := ClaimsResult{Token: *tok, SignatureVerified: p.SignatureVerified, Signature: p.Signature, Rules: p.Rules,
		Notes: p.Notes, Predicted: p.Predicted}
	res.Expires, _ = tok.Expiry()
	if o.Compare {
		if err := o.compare(ctx, &res); err != nil {
			return err
		}
	}
	if err := o.Output.Print(o.Out, res, func(w io.Writer) { printClaims(w, &res) }); err != nil {
		return err
	}
	if o.Compare && len(res.Differences) > 0 {
		return fmt.Errorf("the prediction differs from the API server in %d place(s): check the prefixes, claims and "+
			"requested scopes above", len(res.Differences))
	}
	return nil
}

// compare asks the API server who the token is (SelfSubjectReview) and
// lists the differences, a refusal (401) included.
func (o *ClaimsOptions) compare(ctx context.Context, res *ClaimsResult) error {
	ui, version, err := o.Server.WhoAmI(ctx)
	var ae *kubeapi.APIError
	refused := errors.As(err, &ae) && ae.Code == http.StatusUnauthorized
	switch {
	case refused:
		res.Server = &WhoAmIResult{APIVersion: "refused (401)"}
	case err != nil:
		return err
	default:
		res.Server = &WhoAmIResult{APIVersion: "authentication.k8s.io/" + version, Username: ui.Username, UID: ui.UID,
			Groups: ui.Groups}
	}
	server := kubecode.Identity{}
	if ui != nil {
		server = kubecode.Identity{Username: ui.Username, UID: ui.UID, Groups: ui.Groups,
			Extra: inspect.ExtraOf(ui.Extra)}
		res.Server.Extra = server.Extra
	}
	res.Differences = kubecode.Differences(res.Predicted, server, refused)
	return nil
}

// NeedsAPIServer: claims always runs kube-apiserver's authenticator.
func (o *ClaimsOptions) NeedsAPIServer() bool { return true }

func printClaims(w io.Writer, r *ClaimsResult) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "HEADER\t\n")
	printMap(tw, r.Header)
	fmt.Fprintf(tw, "CLAIMS\t\n")
	printMap(tw, r.Claims)
	if !r.Expires.IsZero() {
		fmt.Fprintf(tw, "Expires\t%s (in %s)\n", r.Expires.Local().Format(time.RFC3339),
			time.Until(r.Expires).Round(time.Second))
	}
	fmt.Fprintf(tw, "Signature\t%s\n", logging.Printable(r.Signature))
	fmt.Fprintf(tw, "PREDICTED\t%s\n", logging.Printable(r.Rules))
	printIdentity(tw, r.Predicted)
	for _, n := range r.Notes {
		fmt.Fprintf(tw, "  note\t%s\n", logging.OneLine(n, 0))
	}
	if r.Server != nil {
		fmt.Fprintf(tw, "API SERVER (%s)\t\n", r.Server.APIVersion)
		if r.Server.Username != "" {
			printIdentity(tw,
				kubecode.Identity{Username: r.Server.Username, UID: r.Server.UID, Groups: r.Server.Groups,
					Extra: r.Server.Extra})
		}
		if len(r.Differences) == 0 {
			fmt.Fprintf(tw, "  differences\tnone\n")
		}
		for _, d := range r.Differences {
			fmt.Fprintf(tw, "  DIFFERENCE\t%s\n", logging.Printable(d))
		}
	}
	_ = tw.Flush()
}

func printIdentity(w io.Writer, id kubecode.Identity) {
	if id.Refused != "" {
		fmt.Fprintf(w, "  refused\t%s\n", logging.Printable(id.Refused))
		return
	}
	fmt.Fprintf(w, "  username\t%s\n", logging.Printable(id.Username))
	if id.UID != "" {
		fmt.Fprintf(w, "  uid\t%s\n", logging.Printable(id.UID))
	}
	fmt.Fprintf(w, "  groups\t[%s]\n", logging.Printable(strings.Join(id.Groups, " ")))
	keys := make([]string, 0, len(id.Extra))
	for k := range id.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  extra %s\t[%s]\n", logging.Printable(k), logging.Printable(strings.Join(id.Extra[k], " ")))
	}
}

func printMap(w io.Writer, m map[string]any) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		if f, ok := v.(float64); ok && slices.Contains([]string{"exp", "iat", "nbf", "auth_time"}, k) {
			v = fmt.Sprintf("%d (%s)", int64(f), time.Unix(int64(f), 0).UTC().Format(time.RFC3339))
		}
		fmt.Fprintf(w, "  %s\t%s\n", logging.Printable(k), logging.Printable(fmt.Sprint(v)))
	}
}
