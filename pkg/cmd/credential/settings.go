package credential

import (
	"net/url"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/exchange"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/login"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/settings"
)

// cloudSigma is the CloudSigma exchange of a, without its runtime seams.
func cloudSigma(a *settings.AuthOptions) *exchange.CloudSigma {
	return &exchange.CloudSigma{
		CloudSigma:   a.CloudSigma(),
		ClientSecret: a.ClientSecret, LegacyPassword: a.CSLegacyPassword, ClientAuthMethod: a.ClientAuthMethod,
	}
}

// tokenExchange is the RFC 8693 exchange of a, without its runtime seams.
func tokenExchange(a *settings.AuthOptions) *exchange.TokenExchange {
	return &exchange.TokenExchange{TokenExchange: a.TokenExchange(), ClientID: a.ClientID, ClientSecret: a.ClientSecret, ClientAuthMethod: a.ClientAuthMethod}
}

// httpOptions are the provider's HTTP client settings of a.
func httpOptions(a *settings.AuthOptions) login.HTTPOptions {
	host := ""
	if u, err := url.Parse(a.IssuerURL); err == nil {
		host = u.Host
	}
	return login.HTTPOptions{CAFiles: a.CertificateAuthorities, CAData: a.CertificateAuthorityData, Insecure: a.InsecureSkipTLSVerify,
		Timeout: a.RequestTimeout, Headers: a.RequestHeaders, HeaderHost: host}
}
