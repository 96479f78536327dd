package login

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/oidc"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/credspec"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
)

// IdentityPlatform obtains Google Cloud Identity Platform ID tokens, whose
// issuer is https://securetoken.google.com/PROJECT and which no plain OIDC
// code flow issues:
//  1. Google sign-in: authorization code + PKCE with Google (Google);
//  2. accounts:signInWithIdp with Google's ID token → the Identity Platform
//     ID token and refresh token;
//  3. refresh at securetoken's v1/token.
//
// The ID token is verified against the securetoken issuer's keys, with the
// project ID as audience.
type IdentityPlatform struct {
	// Google logs in to Google (step 1).
	Google *Client
	// Issuer is https://securetoken.google.com/PROJECT (or a test issuer).
	Issuer         string
	APIKey         string
	Tenant         string
	ToolkitURL     string
	SecureTokenURL string
	HTTPClient     *http.Client
	Log            *logging.Logger
	Now            func() time.Time
	// Emulator accepts the Firebase Auth emulator's unsigned tokens (iss,
	// aud and exp still checked). Never against Google.
	Emulator bool

	provider *oidc.Provider
}

// Project is the last path segment of the issuer: the tokens' audience.
func (p *IdentityPlatform) Project() string { return credspec.IdentityPlatformProject(p.Issuer) }

func (p *IdentityPlatform) verifier(ctx context.Context) (*oidc.Provider, error) {
	if p.provider != nil {
		return p.provider, nil
	}
	prov, err := oidc.Discover(ctx, p.Issuer, p.Project(), p.HTTPClient)
	if err != nil {
		return nil, err
	}
	p.provider = prov
	return prov, nil
}

// Grant signs in with Google, then exchanges Google's ID token.
func (p *IdentityPlatform) Grant(ctx context.Context) (*tokencache.Entry, error) {
	g, err := p.Google.Grant(ctx)
	if err != nil {
		return nil, fmt.Errorf("signing in with Google: %w", err)
	}
	body := map[string]any{
		"postBody":            url.Values{"id_token": {g.IDToken}, "providerId": {"google.com"}}.Encode(),
		"requestUri":          "http://localhost",
		"returnSecureToken":   true,
		"returnIdpCredential": true,
	}
	if p.Tenant != "" {
		body["tenantId"] = p.Tenant
	}
	b, _ := json.Marshal(body)
	u := strings.TrimSuffix(p.ToolkitURL, "/") + "/v1/accounts:signInWithIdp?key=" + url.QueryEscape(p.APIKey)
	p.Log.Printf(1, "identity platform: signInWithIdp at %s", strings.TrimSuffix(p.ToolkitURL, "/"))
	var out struct {
		IDToken      string `json:"idToken" datapolicy:"token"`
		RefreshToken string `json:"refreshToken" datapolicy:"token"`
	}
	if err := p.post(ctx, u, "application/json", b, &out); err != nil {
		return nil, fmt.Errorf("signing in at Identity Platform (signInWithIdp): %w", err)
	}
	return p.entry(ctx, out.IDToken, out.RefreshToken, "")
}

// Refresh redeems the Identity Platform refresh token at securetoken.
func (p *IdentityPlatform) Refresh(ctx context.Context, refreshToken string) (*tokencache.Entry, error) {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}}
	u := strings.TrimSuffix(p.SecureTokenURL, "/") + "/v1/token?key=" + url.QueryEscape(p.APIKey)
	p.Log.Printf(1, "identity platform: refresh at %s", strings.TrimSuffix(p.SecureTokenURL, "/"))
	var out struct {
		IDToken      string `json:"id_token" datapolicy:"token"`
		RefreshToken string `json:"refresh_token" datapolicy:"token"`
	}
	if err := p.post(ctx, u, "application/x-www-form-urlencoded", []byte(form.Encode()), &out); err != nil {
		return nil, fmt.Errorf("refreshing at Identity Platform: %w", err)
	}
	return p.entry(ctx, out.IDToken, out.RefreshToken, refreshToken)
}

func (p *IdentityPlatform) entry(
	ctx context.Context, idToken, refreshToken, oldRefresh string,
) (*tokencache.Entry, error) {
	if idToken == "" {
		return nil, errors.New("no ID token in the answer of Identity Platform")
	}
	var expiry time.Time
	if p.Emulator {
		exp, err := p.checkUnsigned(idToken)
		if err != nil {
			return nil, err
		}
		expiry = exp
	} else {
		prov, err := p.verifier(ctx)
		if err != nil {
			return nil, err
		}
		idt, err := prov.VerifyIDToken(ctx, idToken, "")
		if err != nil {
			return nil, err
		}
		expiry = idt.Expiry
	}
	if refreshToken == "" {
		refreshToken = oldRefresh
	}
	now := time.Now()
	if p.Now != nil {
		now = p.Now()
	}
	return &tokencache.Entry{IDToken: idToken, RefreshToken: refreshToken, IDTokenExpiry: expiry.UTC(),
		Issuer: p.Issuer, ClientID: p.Google.cfg.ClientID, GrantType: credspec.GrantIdentityPlatform,
		ObtainedAt: now.UTC()}, nil
}

// post sends body and decodes a 200 answer; Google's errors become one line.
func (p *IdentityPlatform) post(ctx context.Context, u, contentType string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	hc := p.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		// The URL holds the API key: say only the host.
		return fmt.Errorf("no answer from %s: %v", req.URL.Host, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return googleError(resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("the answer is not the expected JSON: %v", err)
	}
	return nil
}

// googleError reads {"error": {"code", "message", "errors": [{"reason"}]}}.
func googleError(status int, b []byte) error {
	var e struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Errors  []struct {
				Reason string `json:"reason"`
			} `json:"errors"`
			Details []struct {
				Reason string `json:"reason"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e) != nil || e.Error.Message == "" {
		return fmt.Errorf("HTTP %d: not a Google error document", status)
	}
	msg := logging.OneLine(e.Error.Message, 200)
	reason, _, _ := strings.Cut(msg, " ")
	for _, r := range append(e.Error.Errors, e.Error.Details...) {
		if r.Reason == "API_KEY_INVALID" {
			reason = "API_KEY_INVALID"
		}
	}
	hint := ""
	switch reason {
	case "API_KEY_INVALID":
		hint = ": check --identity-platform-api-key (the project's Web API key)"
	case "INVALID_IDP_RESPONSE":
		hint = ": Google's ID token was refused; the OAuth client (--oidc-client-id) must be the one configured for " +
			"the google.com provider of this project"
	case "USER_DISABLED":
		hint = ": the user is disabled in Identity Platform"
	case "INVALID_REFRESH_TOKEN", "TOKEN_EXPIRED", "USER_NOT_FOUND":
		hint = ": log in again"
	}
	return fmt.Errorf("HTTP %d %s%s", status, msg, hint)
}

// checkUnsigned checks an emulator token's iss, aud and exp; the emulator
// signs nothing, so there is no signature to check.
func (p *IdentityPlatform) checkUnsigned(raw string) (time.Time, error) {
	claims := jwt.MapClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(raw, claims); err != nil {
		return time.Time{}, fmt.Errorf("the emulator's ID token is not a JWT: %v", err)
	}
	if iss, _ := claims["iss"].(string); iss != p.Issuer {
		return time.Time{}, fmt.Errorf("the emulator's ID token has iss %q, want %q", iss, p.Issuer)
	}
	if aud, _ := claims.GetAudience(); len(aud) == 0 || aud[0] != p.Project() {
		return time.Time{}, fmt.Errorf("the emulator's ID token has aud %v, want %q", aud, p.Project())
	}
	exp, err := claims.GetExpirationTime()
	if err != nil || exp == nil || !exp.After(time.Now()) {
		return time.Time{}, errors.New("the emulator's ID token is expired or has no exp")
	}
	return exp.Time, nil
}
