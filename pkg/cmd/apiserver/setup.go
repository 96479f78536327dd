package apiserver

import (
	"fmt"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credspec"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/authn"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/credential"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/login"
)

// CheckAuthConfig reads the cluster's AuthenticationConfiguration (as
// kube-apiserver validates it) and says, in one line with the fix, when
// it would refuse the tokens this entry gets: no entry for the issuer, or
// an audience the tokens do not carry. Tokens whose aud setup cannot know
// (access tokens, exchanged tokens without --exchange-audience) are checked
// for the issuer only.
func (Code) CheckAuthConfig(o *credential.SetupOptions) (string, error) {
	cfg, err := authn.LoadConfigFile(o.AuthConfig)
	if err != nil {
		return "", fmt.Errorf("--authentication-config: %w", err)
	}
	a := o.Auth
	if a.Exchange == credspec.ExchangeCloudSigma {
		return "", nil // CloudSigma's tokens are not the provider's
	}
	iss := a.IssuerURL
	listed := false
	for _, j := range cfg.JWT {
		listed = listed || j.Issuer.URL == iss
	}
	if !listed {
		return fmt.Sprintf("the cluster's AuthenticationConfiguration (%s) has no jwt issuer %q: the API server refuses these tokens; add an entry with issuer.url: %s", o.AuthConfig, iss, iss), nil
	}
	var aud string
	switch {
	case a.GrantType == credspec.GrantIdentityPlatform:
		aud = (&login.IdentityPlatform{Issuer: iss}).Project()
	case a.Exchange == credspec.ExchangeTokenExchange && len(a.ExchangeAudiences) == 1:
		aud = a.ExchangeAudiences[0]
	case a.Exchange == credspec.ExchangeNone && !a.UseAccessToken && a.GrantType != credspec.GrantClientCredentials:
		// An ID token's aud. Client credentials mostly get no ID token, and
		// kubectl then gets the access token, whose aud the provider chooses.
		aud = a.ClientID
	default:
		return "", nil
	}
	return audienceNote(iss, aud, cfg), nil
}
