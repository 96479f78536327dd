package linked

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/jwtclaims"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/authn"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/authn/oidcflags"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/kubecode"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/credspec"
)

// claimsAuthnOptions builds the authenticator kube-apiserver would run:
// the request's rules, else the token's own iss and aud (untrusted).
func claimsAuthnOptions(
	r kubecode.PredictRequest, tok *jwtclaims.Token, res *kubecode.Prediction,
) (authn.Options, error) {
	opts, rule, err := authnOptions(r.Authentication, func(l *oidcflags.Legacy) {
		if l.IssuerURL == "" {
			l.IssuerURL = tok.String("iss")
		}
		if len(l.ClientIDs) == 0 {
			l.ClientIDs = tok.Audiences()
			res.Notes = append(res.Notes, "the audience is not checked: give --oidc-client-id")
		}
	})
	res.Rules = rule
	return opts, err
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
	return audienceNote(iss, credspec.IdentityPlatformProject(iss), cfg)
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
			return fmt.Sprintf("Identity Platform tokens carry the project ID %q as aud, but this configuration "+
				"expects %s (an OAuth client ID?): the API server refuses them; set the audience to %q (audiences: "+
				"[%s], or kube-apiserver's --oidc-client-id=%s)",
				aud, strings.Join(j.Issuer.Audiences, ", "), aud, aud, aud)
		}
		return fmt.Sprintf("the tokens carry aud %q, but the configuration of issuer %q expects %s: the API server "+
			"refuses them; add %q to its audiences (or kube-apiserver's --oidc-client-id=%s)",
			aud, iss, strings.Join(j.Issuer.Audiences, ", "), aud, aud)
	}
	return ""
}

// predict runs kube-apiserver's authenticator on raw: with the trusted
// issuers' keys when there are some, and without a signature check to
// tell a signature failure from the rest.
func predict(ctx context.Context, r kubecode.PredictRequest, opts authn.Options, res *kubecode.Prediction) error {
	run := func(keys authn.Keys) (kubecode.Identity, error) {
		opts.Keys = keys
		a, err := authn.New(ctx, opts)
		if err != nil {
			return kubecode.Identity{}, err
		}
		defer a.Close()
		wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		if err := a.WaitReady(wctx); err != nil {
			return kubecode.Identity{}, err
		}
		return authn.IdentityOf(a.Authenticate(ctx, r.Token)), nil
	}
	unverified, err := run(authn.KeysUnverified)
	switch {
	case err != nil && r.Trusted:
		return err
	case err != nil:
		// The rules built from the token's own iss: kube-apiserver could
		// not be configured to accept it (an http issuer, say).
		res.Predicted = kubecode.Identity{Refused: logging.OneLine(err.Error(), 0)}
		res.Signature = "not verified: no trusted issuer given (--oidc-issuer-url or --authentication-config)"
		return nil
	}
	res.Predicted = unverified
	switch {
	case !r.Trusted:
		res.Signature = "not verified: no trusted issuer given (--oidc-issuer-url or --authentication-config)"
		return nil
	case r.SkipVerify:
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

// Predict decodes the token, builds the rules and predicts.
func (Code) Predict(ctx context.Context, r kubecode.PredictRequest) (kubecode.Prediction, error) {
	var res kubecode.Prediction
	tok, err := jwtclaims.Decode(r.Token)
	if err != nil {
		return res, err
	}
	opts, err := claimsAuthnOptions(r, tok, &res)
	if err != nil {
		return res, err
	}
	if note := identityPlatformAudience(tok, opts.Config); note != "" {
		res.Notes = append(res.Notes, note)
	}
	return res, predict(ctx, r, opts, &res)
}
