package credential

import (
	"context"
	"fmt"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credspec"
	"net/http"

	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/exchange"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/login"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/settings"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/tokencache"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/tokensource"
)

// A login grant is the authenticator of the base credential source: it
// obtains and refreshes the login's tokens.
type grantFactory func(rt *sourceRuntime) (tokensource.Authenticator, error)

// An exchange obtains the token kubectl gets, from the base source (the
// login's): it supplies the authenticator of the final source, whose key,
// token choice and renewal margin are settings' recipe alone.
type exchangeFactory func(rt *sourceRuntime, base *tokensource.Source) (tokensource.Authenticator, error)

// grants by effective grant type; every grant not listed is a login of
// pkg/login (authcode, keyboard, device code, client credentials).
var grants = map[string]grantFactory{
	credspec.GrantIdentityPlatform: identityPlatformGrant,
}

// exchanges by --exchange.
var exchanges = map[string]exchangeFactory{
	credspec.ExchangeNone: func(_ *sourceRuntime, base *tokensource.Source) (tokensource.Authenticator, error) {
		return base.NewAuthenticator()
	},
	credspec.ExchangeCloudSigma:    cloudSigmaExchange,
	credspec.ExchangeTokenExchange: tokenExchangeExchange,
}

// sourceRuntime is what every source is built with: the settings, the
// store, the user's streams, and one login client and HTTP client made on
// first use.
type sourceRuntime struct {
	a           *settings.AuthOptions
	g           *cmdutil.GlobalOptions
	streams     genericiooptions.IOStreams
	interactive bool
	store       tokencache.Store
	notify      func(string)
	log         *logging.Logger
	audit       *exchange.Auditor
	loginClient *login.Client
	// noCooldown: a person asked for this login (the login command).
	noCooldown bool
}

func newSourceRuntime(a *settings.AuthOptions, g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams, interactive bool) (*sourceRuntime, error) {
	notify := cmdutil.Notifier(streams.ErrOut)
	store, err := a.NewStore(notify)
	if err != nil {
		return nil, err
	}
	audit := &exchange.Auditor{File: a.AuditLog}
	if g.Verbosity >= 1 {
		audit.W = streams.ErrOut
	}
	return &sourceRuntime{a: a, g: g, streams: streams, interactive: interactive, store: store, notify: notify,
		log: g.Logger(streams.ErrOut), audit: audit}, nil
}

// source is settings' recipe (the one the fast binary reads with), its
// authenticator the exchange's over the login's: two lookups, made only on
// a cache miss.
func (rt *sourceRuntime) source() (*tokensource.Source, error) {
	grant, ok := grants[credspec.EffectiveGrant(rt.a.GrantType)]
	if !ok {
		grant = func(rt *sourceRuntime) (tokensource.Authenticator, error) { return rt.login() }
	}
	exchange, ok := exchanges[rt.a.Exchange]
	if !ok {
		return nil, fmt.Errorf("unknown exchange %q", rt.a.Exchange)
	}
	base := rt.a.BaseSource(rt.store, rt.notify, func() (tokensource.Authenticator, error) { return grant(rt) })
	base.Log, base.NoCooldown = rt.log, rt.noCooldown
	src := rt.a.Source(rt.store, rt.notify, func() (tokensource.Authenticator, error) { return exchange(rt, base) })
	src.Log, src.NoCooldown = rt.log, rt.noCooldown
	return src, nil
}

func (rt *sourceRuntime) httpClient() (*http.Client, error) {
	return login.NewHTTPClient(httpOptions(rt.a))
}

// loginConfig is the login package's configuration for issuer, with the
// user's streams.
func (rt *sourceRuntime) loginConfig() (login.Config, error) {
	httpClient, err := rt.httpClient()
	if err != nil {
		return login.Config{}, err
	}
	cfg := login.Config{OIDC: rt.a.OIDC}
	cfg.HTTPClient, cfg.Interactive, cfg.Stdin, cfg.Stderr = httpClient, rt.interactive, rt.streams.In, rt.streams.ErrOut
	cfg.StderrIsTerminal = rt.g.IsTerminal(rt.streams.ErrOut)
	cfg.Log = rt.log
	return cfg, nil
}

// login is the one login client of this run.
func (rt *sourceRuntime) login() (*login.Client, error) {
	if rt.loginClient != nil {
		return rt.loginClient, nil
	}
	cfg, err := rt.loginConfig()
	if err != nil {
		return nil, err
	}
	rt.loginClient = login.New(cfg)
	return rt.loginClient, nil
}

// identityPlatformGrant signs in with Google (the browser flow of the same
// flags, with the Google issuer), then with Identity Platform.
func identityPlatformGrant(rt *sourceRuntime) (tokensource.Authenticator, error) {
	cfg, err := rt.loginConfig()
	if err != nil {
		return nil, err
	}
	a := rt.a
	cfg.IssuerURL = a.GoogleIssuer
	cfg.GrantType = credspec.GrantAuthCode
	cfg.ExtraScopes = append(cfg.ExtraScopes, "email")
	return &login.IdentityPlatform{
		Google: login.New(cfg), Issuer: a.IssuerURL, APIKey: a.IPAPIKey, Tenant: a.IPTenant,
		ToolkitURL: a.IPEndpoint, SecureTokenURL: a.SecureTokenURL, HTTPClient: cfg.HTTPClient, Log: cfg.Log, Emulator: a.IPEmulator,
	}, nil
}

// cloudSigmaExchange is CloudSigma's three steps; it has its own service
// identity, so the base login is not used.
func cloudSigmaExchange(rt *sourceRuntime, _ *tokensource.Source) (tokensource.Authenticator, error) {
	cs := cloudSigma(rt.a)
	var err error
	if cs.HTTPClient, err = rt.httpClient(); err != nil {
		return nil, err
	}
	cs.Audit, cs.Store, cs.LockDir, cs.Notify, cs.Log = rt.audit, rt.store, rt.a.TokenCacheDir, rt.notify, rt.log
	return cs.Authenticator(), nil
}

// tokenExchangeExchange exchanges the base login's token (RFC 8693) at the
// same provider's token endpoint.
func tokenExchangeExchange(rt *sourceRuntime, base *tokensource.Source) (tokensource.Authenticator, error) {
	a := rt.a
	tx := tokenExchange(a)
	base.UseAccessToken = credspec.TokenType(a.ExchangeSubject) != credspec.TokenType("id_token")
	tx.Base, tx.Audit, tx.Log = base, rt.audit, rt.log
	tx.TokenURL = func(ctx context.Context) (string, error) {
		lc, err := rt.login()
		if err != nil {
			return "", err
		}
		return lc.TokenURL(ctx)
	}
	var err error
	if tx.HTTPClient, err = rt.httpClient(); err != nil {
		return nil, err
	}
	return tx, nil
}
