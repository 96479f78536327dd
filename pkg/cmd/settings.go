package cmd

import (
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/exchange"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/login"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/settings"
)

// AuthOptions are the settings shared by get-token, login, setup, logout
// and cloudsigma whoami (pkg/settings, which the fast get-token binary
// shares).
type AuthOptions = settings.AuthOptions

// NewAuthOptions returns the defaults.
var NewAuthOptions = settings.NewAuthOptions

// Settings names used by the commands.
const (
	EnvClientSecret       = settings.EnvClientSecret
	ExchangeCloudSigma    = settings.ExchangeCloudSigma
	ExchangeTokenExchange = settings.ExchangeTokenExchange
)

// loginConfig is the configuration of the login package for a.
func loginConfig(a *AuthOptions) login.Config {
	return login.Config{
		IssuerURL:       a.IssuerURL,
		ClientID:        a.ClientID,
		ClientSecret:    a.ClientSecret,
		ExtraScopes:     a.ExtraScopes,
		GrantType:       a.GrantType,
		UseAccessToken:  a.UseAccessToken,
		ListenAddresses: a.ListenAddresses,
		RedirectURL:     a.RedirectURL,
		BrowserCommand:  a.BrowserCommand,
		SkipOpenBrowser: a.SkipOpenBrowser,
		AuthTimeout:     a.AuthTimeout,
		AuthMethod:      a.ClientAuthMethod,
	}
}

// cloudSigma is the CloudSigma exchange of a, without its runtime seams.
func cloudSigma(a *AuthOptions) *exchange.CloudSigma {
	return &exchange.CloudSigma{
		CloudSigma:   a.CloudSigma(),
		ClientSecret: a.ClientSecret, LegacyPassword: a.CSLegacyPassword, ClientAuthMethod: a.ClientAuthMethod,
	}
}

// tokenExchange is the RFC 8693 exchange of a, without its runtime seams.
func tokenExchange(a *AuthOptions) *exchange.TokenExchange {
	return &exchange.TokenExchange{TokenExchange: a.TokenExchange(), ClientID: a.ClientID, ClientSecret: a.ClientSecret, ClientAuthMethod: a.ClientAuthMethod}
}
