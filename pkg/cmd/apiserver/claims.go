package apiserver

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

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/authn"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/authn/oidcflags"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/inspect"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/jwtclaims"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/kubeapi"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/login"
)

// ClaimsResult is what claims prints with -o json|yaml.
type ClaimsResult struct {
	jwtclaims.Token
	Expires           time.Time `json:"expires,omitzero"`
	SignatureVerified bool      `json:"signatureVerified"`
	// Signature says how the signature was checked, or why not.
	Signature   string                `json:"signature"`
	Rules       string                `json:"rules"`
	Notes       []string              `json:"notes,omitempty"`
	Predicted   authn.Identity        `json:"predicted"`
	Server      *inspect.WhoAmIResult `json:"server,omitempty"`
	Differences []string              `json:"differences,omitempty"`
}

// authnOptions builds the authenticator kube-apiserver would run, and
// says whether its issuers were named by the user (trusted).
func claimsAuthnOptions(o *inspect.ClaimsOptions, tok *jwtclaims.Token, res *ClaimsResult) (authn.Options, bool, error) {
	trusted := o.AuthConfig != "" || o.OIDC.IssuerURL != ""
	opts, rule, err := authnOptions(o.AuthConfig, &o.OIDC, func(l *oidcflags.Legacy) {
		if l.IssuerURL == "" {
			l.IssuerURL = tok.String("iss")
		}
		if len(l.ClientIDs) == 0 {
			l.ClientIDs = tok.Audiences()
			res.Notes = append(res.Notes, "the audience is not checked: give --oidc-client-id")
		}
	})
	res.Rules = rule
	return opts, trusted, err
}

// identityPlatformAudience explains the audience of Google Cloud Identity
// Platform's tokens (issuer https://securetoken.google.com/PROJECT): their
// aud is the project ID, while a cluster configured from a Google OAuth
// client expects the client ID, and refuses them.
func identityPlatformAudience(tok *jwtclaims.Token, cfg *authn.Config) string {
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
func predict(ctx context.Context, o *inspect.ClaimsOptions, raw string, opts authn.Options, trusted bool, res *ClaimsResult) error {
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
func (Code) Claims(ctx context.Context, o *inspect.ClaimsOptions) error {
	raw, err := o.ReadToken(ctx)
	if err != nil {
		return err
	}
	tok, err := jwtclaims.Decode(raw)
	if err != nil {
		return err
	}
	res := ClaimsResult{Token: *tok}
	res.Expires, _ = tok.Expiry()
	opts, trusted, err := claimsAuthnOptions(o, tok, &res)
	if err != nil {
		return err
	}
	if note := identityPlatformAudience(tok, opts.Config); note != "" {
		res.Notes = append(res.Notes, note)
	}
	if err := predict(ctx, o, raw, opts, trusted, &res); err != nil {
		return err
	}
	if o.Compare {
		ui, version, err := o.Server.WhoAmI(ctx)
		var ae *kubeapi.APIError
		refused := errors.As(err, &ae) && ae.Code == http.StatusUnauthorized
		switch {
		case refused:
			res.Server = &inspect.WhoAmIResult{APIVersion: "refused (401)"}
		case err != nil:
			return err
		default:
			res.Server = &inspect.WhoAmIResult{APIVersion: "authentication.k8s.io/" + version, Username: ui.Username, UID: ui.UID, Groups: ui.Groups}
		}
		server := authn.Identity{}
		if ui != nil {
			server = authn.Identity{Username: ui.Username, UID: ui.UID, Groups: ui.Groups, Extra: inspect.ExtraOf(ui.Extra)}
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
	fmt.Fprintf(tw, "Signature\t%s\n", logging.Printable(r.Signature))
	fmt.Fprintf(tw, "PREDICTED\t%s\n", logging.Printable(r.Rules))
	printIdentity(tw, r.Predicted)
	for _, n := range r.Notes {
		fmt.Fprintf(tw, "  note\t%s\n", logging.OneLine(n, 0))
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
			fmt.Fprintf(tw, "  DIFFERENCE\t%s\n", logging.Printable(d))
		}
	}
	_ = tw.Flush()
}

func printIdentity(w io.Writer, id authn.Identity) {
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
