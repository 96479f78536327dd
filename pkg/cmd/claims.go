package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/authn"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/kubeapi"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/login"
)

// ClaimsOptions is the claims command.
type ClaimsOptions struct {
	Kube       *KubeFlags
	TokenFile  string
	Output     *OutputFlags
	Compare    bool
	AuthConfig string
	// OIDC are kube-apiserver's --oidc-* flags.
	OIDC       OIDCFlags
	SkipVerify bool
	genericiooptions.IOStreams
	global *GlobalOptions
}

// ClaimsResult is what claims prints with -o json|yaml.
type ClaimsResult struct {
	authn.Token
	Expires           time.Time `json:"expires,omitzero"`
	SignatureVerified bool      `json:"signatureVerified"`
	// Signature says how the signature was checked, or why not.
	Signature   string         `json:"signature"`
	Rules       string         `json:"rules"`
	Notes       []string       `json:"notes,omitempty"`
	Predicted   authn.Identity `json:"predicted"`
	Server      *WhoAmIResult  `json:"server,omitempty"`
	Differences []string       `json:"differences,omitempty"`
}

// NewCmdClaims builds claims.
func NewCmdClaims(g *GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
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
		RunE: runE(o),
	}
	o.Kube = NewKubeFlags(cmd.Flags())
	o.Kube.RegisterCompletions(cmd)
	f := cmd.Flags()
	f.StringVar(&o.TokenFile, "token-file", "", "Read the token from this file (- for stdin) instead of the cache")
	o.Output = NewOutputFlags(f, "a table")
	f.BoolVar(&o.Compare, "compare", false, "Ask the API server who the token is and list the differences")
	f.StringVar(&o.AuthConfig, "authentication-config", "", "kube-apiserver's AuthenticationConfiguration file (v1 or v1beta1) to predict with")
	o.OIDC.AddFlags(f, map[string]string{"client-id": "oidc-client-id", "issuer-certificate-authority": "oidc-certificate-authority",
		"username-claim": "oidc-username-claim", "username-prefix": "oidc-username-prefix", "groups-claim": "oidc-groups-claim", "groups-prefix": "oidc-groups-prefix"}, streams.ErrOut)
	f.BoolVar(&o.SkipVerify, "skip-signature-check", false, "Do not fetch the issuer's keys (the prediction says the signature is not verified)")
	return cmd
}

// Complete routes the Kubernetes libraries' logs to stderr at -v 2 and
// above, and nowhere otherwise.
func (o *ClaimsOptions) Complete() error {
	routeKlog(o.ErrOut, o.global.Verbosity >= 2)
	return nil
}

// Validate checks the flags.
func (o *ClaimsOptions) Validate() error {
	if o.AuthConfig != "" && len(o.OIDC.Given()) > 0 {
		return errors.New("give either --authentication-config or the legacy --oidc-* rules, not both")
	}
	return o.Output.Validate()
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

// authnOptions builds the authenticator kube-apiserver would run, and
// says whether its issuers were named by the user (trusted).
func (o *ClaimsOptions) authnOptions(tok *authn.Token, res *ClaimsResult) (authn.Options, bool, error) {
	if o.AuthConfig != "" {
		cfg, err := authn.LoadConfigFile(o.AuthConfig)
		if err != nil {
			return authn.Options{}, false, err
		}
		res.Rules = "AuthenticationConfiguration " + o.AuthConfig
		return authn.Options{Config: cfg}, true, nil
	}
	l, err := o.OIDC.Legacy()
	if err != nil {
		return authn.Options{}, false, err
	}
	trusted := l.IssuerURL != ""
	if !trusted {
		l.IssuerURL = tok.String("iss")
	}
	if len(l.ClientIDs) == 0 {
		l.ClientIDs = tok.Audiences()
		res.Notes = append(res.Notes, "the audience is not checked: give --oidc-client-id")
	}
	cfg, algs := l.Config()
	res.Rules = "legacy --oidc-* flags"
	return authn.Options{Config: cfg, SigningAlgs: algs}, trusted, nil
}

// identityPlatformAudience explains the audience of Google Cloud Identity
// Platform's tokens (issuer https://securetoken.google.com/PROJECT): their
// aud is the project ID, while a cluster configured from a Google OAuth
// client expects the client ID, and refuses them.
func identityPlatformAudience(tok *authn.Token, cfg *authn.Config) string {
	iss := tok.String("iss")
	if !strings.HasPrefix(iss, identityPlatformIssuer) || cfg == nil {
		return ""
	}
	return audienceNote(iss, (&login.IdentityPlatform{Issuer: iss}).Project(), cfg)
}

const identityPlatformIssuer = "https://securetoken.google.com/"

// audienceNote says in one line, with the fix, when cfg's entry for iss
// would refuse tokens whose aud is aud ("" when it accepts them or has no
// entry for iss).
func audienceNote(iss, aud string, cfg *authn.Config) string {
	for _, j := range cfg.JWT {
		if j.Issuer.URL != iss || slices.Contains(j.Issuer.Audiences, aud) {
			continue
		}
		if strings.HasPrefix(iss, identityPlatformIssuer) {
			return fmt.Sprintf("Identity Platform tokens carry the project ID %q as aud, but this configuration expects %s (an OAuth client ID?): the API server refuses them; set the audience to %q (audiences: [%s], or kube-apiserver's --oidc-client-id=%s)",
				aud, strings.Join(j.Issuer.Audiences, ", "), aud, aud, aud)
		}
		return fmt.Sprintf("the tokens carry aud %q, but the configuration of issuer %q expects %s: the API server refuses them; add %q to its audiences (or kube-apiserver's --oidc-client-id=%s)",
			aud, iss, strings.Join(j.Issuer.Audiences, ", "), aud, aud)
	}
	return ""
}

// predict runs kube-apiserver's authenticator on raw: with the trusted
// issuers' keys when there are some, and without a signature check to
// tell a signature failure from the rest.
func (o *ClaimsOptions) predict(ctx context.Context, raw string, opts authn.Options, trusted bool, res *ClaimsResult) error {
	run := func(keys authn.Keys) (authn.Identity, error) {
		opts.Keys = keys
		a, err := authn.New(ctx, opts)
		if err != nil {
			return authn.Identity{}, err
		}
		defer a.Close()
		wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		if err := a.WaitReady(wctx); err != nil {
			return authn.Identity{}, err
		}
		return authn.IdentityOf(a.Authenticate(ctx, raw)), nil
	}
	unverified, err := run(authn.KeysUnverified)
	switch {
	case err != nil && trusted:
		return err
	case err != nil:
		// The rules built from the token's own iss: kube-apiserver could
		// not be configured to accept it (an http issuer, say).
		res.Predicted = authn.Identity{Refused: logging.OneLine(err.Error(), 0)}
		res.Signature = "not verified: no trusted issuer given (--oidc-issuer-url or --authentication-config)"
		return nil
	}
	res.Predicted = unverified
	switch {
	case !trusted:
		res.Signature = "not verified: no trusted issuer given (--oidc-issuer-url or --authentication-config)"
		return nil
	case o.SkipVerify:
		res.Signature = "not verified: --skip-signature-check"
		return nil
	}
	verified, err := run(authn.KeysDiscovered)
	switch {
	case err != nil:
		res.Signature = "not verified: " + logging.OneLine(err.Error(), 0)
	case verified.Refused == "":
		res.SignatureVerified = true
		res.Signature = "verified against the trusted issuer's keys"
		res.Predicted = verified
	case unverified.Refused == "":
		// Only the keys differ between the two runs.
		res.Signature = "INVALID: " + verified.Refused
		res.Predicted = verified
	default:
		res.Signature = "not verified: " + verified.Refused
	}
	return nil
}

// Run decodes, verifies, predicts and compares.
func (o *ClaimsOptions) Run(ctx context.Context) error {
	raw, err := o.token(ctx)
	if err != nil {
		return err
	}
	tok, err := authn.DecodeJWT(raw)
	if err != nil {
		return err
	}
	res := ClaimsResult{Token: *tok}
	res.Expires, _ = tok.Expiry()
	opts, trusted, err := o.authnOptions(tok, &res)
	if err != nil {
		return err
	}
	if note := identityPlatformAudience(tok, opts.Config); note != "" {
		res.Notes = append(res.Notes, note)
	}
	if err := o.predict(ctx, raw, opts, trusted, &res); err != nil {
		return err
	}
	if o.Compare {
		client, _, err := o.Kube.Client()
		if err != nil {
			return err
		}
		ui, version, err := client.WhoAmI(ctx)
		var ae *kubeapi.APIError
		refused := errors.As(err, &ae) && ae.Code == http.StatusUnauthorized
		switch {
		case refused:
			res.Server = &WhoAmIResult{APIVersion: "refused (401)"}
		case err != nil:
			return err
		default:
			res.Server = &WhoAmIResult{APIVersion: "authentication.k8s.io/" + version, Username: ui.Username, UID: ui.UID, Groups: ui.Groups}
		}
		server := authn.Identity{}
		if ui != nil {
			server = authn.Identity{Username: ui.Username, UID: ui.UID, Groups: ui.Groups, Extra: extraOf(ui.Extra)}
			res.Server.Extra = server.Extra
		}
		res.Differences = authn.Differences(res.Predicted, server, refused)
	}
	if err := o.Output.Print(o.Out, res, func(w io.Writer) { printClaims(w, &res) }); err != nil {
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
	fmt.Fprintf(tw, "Signature\t%s\n", printable(r.Signature))
	fmt.Fprintf(tw, "PREDICTED (%s)\t\n", r.Rules)
	printIdentity(tw, r.Predicted)
	for _, n := range r.Notes {
		fmt.Fprintf(tw, "  note\t%s\n", n)
	}
	if r.Server != nil {
		fmt.Fprintf(tw, "API SERVER (%s)\t\n", r.Server.APIVersion)
		if r.Server.Username != "" {
			printIdentity(tw, authn.Identity{Username: r.Server.Username, UID: r.Server.UID, Groups: r.Server.Groups, Extra: r.Server.Extra})
		}
		if len(r.Differences) == 0 {
			fmt.Fprintf(tw, "  differences\tnone\n")
		}
		for _, d := range r.Differences {
			fmt.Fprintf(tw, "  DIFFERENCE\t%s\n", printable(d))
		}
	}
	_ = tw.Flush()
}

func printIdentity(w io.Writer, id authn.Identity) {
	if id.Refused != "" {
		fmt.Fprintf(w, "  refused\t%s\n", printable(id.Refused))
		return
	}
	fmt.Fprintf(w, "  username\t%s\n", printable(id.Username))
	if id.UID != "" {
		fmt.Fprintf(w, "  uid\t%s\n", printable(id.UID))
	}
	fmt.Fprintf(w, "  groups\t[%s]\n", printable(strings.Join(id.Groups, " ")))
	keys := make([]string, 0, len(id.Extra))
	for k := range id.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  extra %s\t[%s]\n", printable(k), printable(strings.Join(id.Extra[k], " ")))
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
		fmt.Fprintf(w, "  %s\t%s\n", printable(k), printable(fmt.Sprint(v)))
	}
}

// printable escapes what is not printable (a claim is the token author's
// text: an escape sequence must not reach the terminal, and a
// bidirectional override or zero-width character must not disguise a
// name), and tabs, which would break the table.
func printable(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }) {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}
