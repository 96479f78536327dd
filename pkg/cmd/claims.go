package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/inspect"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/login"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/oidc"
)

// ClaimsOptions is the claims command.
type ClaimsOptions struct {
	Kube       *KubeFlags
	TokenFile  string
	Output     string
	Compare    bool
	AuthConfig string
	// The legacy --oidc-* rules.
	UsernameClaim  string
	UsernamePrefix string
	GroupsClaim    string
	GroupsPrefix   string
	ClientID       string
	CA             string
	SkipVerify     bool
	genericiooptions.IOStreams
	global *GlobalOptions

	prefixSet bool
}

// ClaimsResult is what claims prints with -o json|yaml.
type ClaimsResult struct {
	inspect.Token
	Expires           time.Time        `json:"expires,omitzero"`
	SignatureVerified bool             `json:"signatureVerified"`
	SignatureError    string           `json:"signatureError,omitempty"`
	Rules             string           `json:"rules"`
	Predicted         inspect.Identity `json:"predicted"`
	Server            *WhoAmIResult    `json:"server,omitempty"`
	Differences       []string         `json:"differences,omitempty"`
}

// NewCmdClaims builds claims.
func NewCmdClaims(g *GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ClaimsOptions{IOStreams: streams, global: g}
	cmd := &cobra.Command{
		Use:   "claims",
		Short: "Decode the current token, verify its signature, and predict the Kubernetes identity its claims map to",
		Long: `claims decodes the current kubeconfig user's token (from kubectl-impersonate's cache,
without printing the token), or --token-file (- for stdin), checks its signature against
the issuer's JWKS, and predicts the username and groups the API server derives from it:
with kube-apiserver's legacy --oidc-* rules (the same flag names here, including the
"<issuer>#" default prefix), or with a structured --authentication-config file.
With --compare it asks the API server (SelfSubjectReview) and lists every difference.`,
		Example: `  kubectl impersonate claims --username-claim=email --groups-claim=groups
  kubectl impersonate claims --authentication-config=/etc/kubernetes/auth-config.yaml --compare
  kubectl impersonate claims --token-file=- < token.jwt -o json`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	o.Kube = NewKubeFlags(cmd.Flags())
	o.Kube.RegisterCompletions(cmd)
	f := cmd.Flags()
	f.StringVar(&o.TokenFile, "token-file", "", "Read the token from this file (- for stdin) instead of the cache")
	f.StringVarP(&o.Output, "output", "o", "", "Output format: json|yaml (default a table)")
	f.BoolVar(&o.Compare, "compare", false, "Ask the API server who the token is and list the differences")
	f.StringVar(&o.AuthConfig, "authentication-config", "", "kube-apiserver's AuthenticationConfiguration file (v1beta1 or v1) to predict with")
	f.StringVar(&o.UsernameClaim, "username-claim", "sub", "Legacy rules: --oidc-username-claim")
	f.StringVar(&o.UsernamePrefix, "username-prefix", "", "Legacy rules: --oidc-username-prefix (unset: \"<issuer>#\" unless the claim is email; - for none)")
	f.StringVar(&o.GroupsClaim, "groups-claim", "", "Legacy rules: --oidc-groups-claim")
	f.StringVar(&o.GroupsPrefix, "groups-prefix", "", "Legacy rules: --oidc-groups-prefix")
	f.StringVar(&o.ClientID, "client-id", "", "Legacy rules: --oidc-client-id (checked against aud)")
	f.StringVar(&o.CA, "issuer-certificate-authority", "", "PEM file of a CA for the issuer's discovery and JWKS")
	f.BoolVar(&o.SkipVerify, "skip-signature-check", false, "Do not fetch the issuer's JWKS")
	cmd.PreRun = func(c *cobra.Command, _ []string) { o.prefixSet = c.Flags().Changed("username-prefix") }
	return cmd
}

// Complete reads the token.
func (o *ClaimsOptions) Complete() error { return nil }

// Validate checks the flags.
func (o *ClaimsOptions) Validate() error {
	if o.AuthConfig != "" && (o.prefixSet || o.GroupsClaim != "" || o.GroupsPrefix != "") {
		return errors.New("give either --authentication-config or the legacy --username-*/--groups-* rules, not both")
	}
	return validateOutput(o.Output)
}

func (o *ClaimsOptions) token(ctx context.Context) (string, error) {
	switch o.TokenFile {
	case "":
		tok, _, err := o.Kube.CachedToken(ctx, o.global.Getenv)
		if errors.Is(err, errNotOurs) {
			return "", fmt.Errorf("%w: give the token with --token-file", err)
		}
		return tok, err
	case "-":
		b, err := io.ReadAll(io.LimitReader(o.In, 1<<20))
		return strings.TrimSpace(string(b)), err
	default:
		b, err := os.ReadFile(o.TokenFile)
		return strings.TrimSpace(string(b)), err
	}
}

// Run decodes, verifies, predicts and compares.
func (o *ClaimsOptions) Run(ctx context.Context) error {
	raw, err := o.token(ctx)
	if err != nil {
		return err
	}
	tok, err := inspect.DecodeJWT(raw)
	if err != nil {
		return err
	}
	res := ClaimsResult{Token: *tok}
	res.Expires, _ = tok.Expiry()
	if !o.SkipVerify {
		hc, err := login.NewHTTPClient(o.CA, false, 10*time.Second)
		if err != nil {
			return err
		}
		if err := oidc.VerifySignature(ctx, hc, tok.String("iss"), raw); err != nil {
			res.SignatureError = err.Error()
		} else {
			res.SignatureVerified = true
		}
	}
	if o.AuthConfig != "" {
		b, err := os.ReadFile(o.AuthConfig)
		if err != nil {
			return fmt.Errorf("reading --authentication-config: %w", err)
		}
		cfg, err := inspect.ParseAuthenticationConfiguration(b)
		if err != nil {
			return err
		}
		res.Rules = "AuthenticationConfiguration " + o.AuthConfig
		res.Predicted = inspect.PredictStructured(ctx, tok, cfg)
	} else {
		rules := inspect.LegacyRules{IssuerURL: tok.String("iss"), ClientID: o.ClientID, UsernameClaim: o.UsernameClaim, GroupsClaim: o.GroupsClaim, GroupsPrefix: o.GroupsPrefix}
		if o.prefixSet {
			rules.UsernamePrefix = &o.UsernamePrefix
		}
		res.Rules = "legacy --oidc-* flags"
		res.Predicted = inspect.PredictLegacy(tok, rules)
	}
	if o.Compare {
		client, _, err := o.Kube.Client()
		if err != nil {
			return err
		}
		ui, version, err := client.WhoAmI(ctx)
		if err != nil {
			return err
		}
		res.Server = &WhoAmIResult{APIVersion: "authentication.k8s.io/" + version, Username: ui.Username, UID: ui.UID, Groups: ui.Groups}
		res.Differences = inspect.Compare(res.Predicted, ui.Username, ui.Groups)
	}
	if err := printResult(o.Out, o.Output, res, func(w io.Writer) { printClaims(w, &res) }); err != nil {
		return err
	}
	if o.Compare && len(res.Differences) > 0 {
		return fmt.Errorf("the prediction differs from the API server in %d place(s): check the prefixes, claims and requested scopes above", len(res.Differences))
	}
	return nil
}

func printClaims(w io.Writer, r *ClaimsResult) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "HEADER\t\n")
	printMap(tw, r.Header)
	fmt.Fprintf(tw, "CLAIMS\t\n")
	printMap(tw, r.Claims)
	if !r.Expires.IsZero() {
		fmt.Fprintf(tw, "Expires\t%s (in %s)\n", r.Expires.Local().Format(time.RFC3339), time.Until(r.Expires).Round(time.Second))
	}
	switch {
	case r.SignatureVerified:
		fmt.Fprintf(tw, "Signature\tverified against the issuer's JWKS\n")
	case r.SignatureError != "":
		fmt.Fprintf(tw, "Signature\tNOT verified: %s\n", r.SignatureError)
	default:
		fmt.Fprintf(tw, "Signature\tnot checked\n")
	}
	fmt.Fprintf(tw, "PREDICTED (%s)\t\n", r.Rules)
	fmt.Fprintf(tw, "  username\t%s\n", r.Predicted.Username)
	fmt.Fprintf(tw, "  groups\t[%s]\n", strings.Join(r.Predicted.Groups, " "))
	for _, p := range r.Predicted.Problems {
		fmt.Fprintf(tw, "  problem\t%s\n", p)
	}
	if r.Server != nil {
		fmt.Fprintf(tw, "API SERVER (%s)\t\n", r.Server.APIVersion)
		fmt.Fprintf(tw, "  username\t%s\n", r.Server.Username)
		fmt.Fprintf(tw, "  groups\t[%s]\n", strings.Join(r.Server.Groups, " "))
		if len(r.Differences) == 0 {
			fmt.Fprintf(tw, "  differences\tnone\n")
		}
		for _, d := range r.Differences {
			fmt.Fprintf(tw, "  DIFFERENCE\t%s\n", d)
		}
	}
	_ = tw.Flush()
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
		fmt.Fprintf(w, "  %s\t%v\n", k, v)
	}
}
