// Package oidc discovers an OpenID Connect provider and verifies the ID
// tokens it issues.
//
//   - Verification is OpenID Connect Core 1.0 §3.1.3.7: signature against
//     the provider's JWKS, iss, aud, exp, and the nonce of the request.
//
// It wraps github.com/coreos/go-oidc. Nothing here runs on the cached
// get-token path: discovery and JWKS fetches happen only when a token is
// obtained.
package oidc

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Provider is a discovered OIDC provider.
type Provider struct {
	Issuer   string
	Endpoint oauth2.Endpoint
	// PKCEMethods is the discovery document's
	// code_challenge_methods_supported (RFC 8414 §2), if listed.
	PKCEMethods []string
	// RevocationURL is the discovery document's revocation_endpoint (RFC
	// 8414 §2, RFC 7009), "" when the provider advertises none (Dex).
	RevocationURL string
	verifier      *gooidc.IDTokenVerifier
}

// Discover fetches {issuer}/.well-known/openid-configuration with client and
// checks that the document names the same issuer.
func Discover(ctx context.Context, issuer, clientID string, client *http.Client) (*Provider, error) {
	ctx = gooidc.ClientContext(ctx, client)
	p, err := gooidc.NewProvider(ctx, issuer)
	if err != nil {
		return nil, &DiscoveryError{Issuer: issuer, Err: err}
	}
	endpoint := p.Endpoint()
	endpoint.AuthStyle = authStyle(p)
	var doc struct {
		PKCE       []string `json:"code_challenge_methods_supported"`
		Revocation string   `json:"revocation_endpoint"`
	}
	_ = p.Claims(&doc)
	return &Provider{
		Issuer:        issuer,
		Endpoint:      endpoint,
		PKCEMethods:   doc.PKCE,
		RevocationURL: doc.Revocation,
		verifier:      p.Verifier(&gooidc.Config{ClientID: clientID}),
	}, nil
}

// authStyle picks how a confidential client authenticates at the token
// endpoint: client_secret_basic, the default of OpenID Connect Discovery
// 1.0, unless the provider lists client_secret_post only. Choosing here
// avoids x/oauth2's auto-detection, which repeats a failed request in the
// other style and so doubles token endpoint calls.
func authStyle(p *gooidc.Provider) oauth2.AuthStyle {
	var doc struct {
		Methods []string `json:"token_endpoint_auth_methods_supported"`
	}
	if err := p.Claims(&doc); err != nil || len(doc.Methods) == 0 {
		return oauth2.AuthStyleInHeader
	}
	for _, m := range doc.Methods {
		if m == "client_secret_basic" {
			return oauth2.AuthStyleInHeader
		}
	}
	for _, m := range doc.Methods {
		if m == "client_secret_post" {
			return oauth2.AuthStyleInParams
		}
	}
	return oauth2.AuthStyleInHeader
}

// IDToken is a verified ID token.
type IDToken struct {
	Subject string
	Expiry  time.Time
	Nonce   string
}

// ErrNonceMismatch reports an ID token that does not answer our request.
var ErrNonceMismatch = errors.New("ID token nonce does not match the request")

// VerifyIDToken checks the signature (JWKS), iss, aud and exp of raw, and,
// when nonce is not empty, that the token carries that nonce. Tokens from a
// refresh or a device/client-credentials grant have no request nonce to
// compare.
func (p *Provider) VerifyIDToken(ctx context.Context, raw, nonce string) (*IDToken, error) {
	tok, err := p.verifier.Verify(ctx, raw)
	if err != nil {
		return nil, fmt.Errorf("verifying ID token: %w", err)
	}
	if nonce != "" && tok.Nonce != nonce {
		return nil, fmt.Errorf("verifying ID token: %w", ErrNonceMismatch)
	}
	return &IDToken{Subject: tok.Subject, Expiry: tok.Expiry, Nonce: tok.Nonce}, nil
}

// tlsHint says what to do about a certificate the provider's TLS
// connection did not verify.
func tlsHint(err error) string {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	switch {
	case errors.As(err, &unknown):
		return " (give the CA that signed the provider's certificate with --oidc-certificate-authority)"
	case errors.As(err, &host):
		return " (the certificate is for another name: check --oidc-issuer-url)"
	}
	return ""
}

// DiscoveryError is a failed discovery.
type DiscoveryError struct {
	Issuer string
	Err    error
}

func (e *DiscoveryError) Error() string {
	return fmt.Sprintf("discovering OIDC provider %s: %v%s", e.Issuer, e.Err, tlsHint(e.Err))
}

func (e *DiscoveryError) Unwrap() error { return e.Err }

// discoveryStatus is go-oidc's error for an answer other than 200: the
// status line first.
var discoveryStatus = regexp.MustCompile(`^(5[0-9][0-9]|429) `)

// Transient is true for the provider's passing trouble, as at its token
// endpoint (oauth.Error): no answer (refused, reset, timed out), 5xx, 429,
// or a success that is not a discovery document (a proxy's page). A
// certificate that does not verify, a 4xx or another issuer are the
// settings' fault, and stay so.
func (e *DiscoveryError) Transient() bool {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	if errors.As(e.Err, &unknown) || errors.As(e.Err, &host) || errors.As(e.Err, &invalid) ||
		errors.As(e.Err, &verify) {
		return false
	}
	var ue *url.Error
	msg := e.Err.Error()
	return errors.As(e.Err, &ue) || discoveryStatus.MatchString(msg) || strings.Contains(msg, "failed to decode "+
		"provider discovery object")
}
