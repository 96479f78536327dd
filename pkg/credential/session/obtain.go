package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/settings"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/exchange"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/login"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/oauth"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/credspec"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokensource"
)

// Env is what obtaining a token needs besides its settings: the person's
// streams and what this run may do with them.
type Env struct {
	In     io.Reader
	ErrOut io.Writer
	// Interactive: a person may be asked (kubectl's interactiveMode, or
	// a terminal).
	Interactive bool
	// Person: a person asked for this login (the login command): it
	// starts whatever the cooldown of a failed one.
	Person           bool
	StderrIsTerminal bool
	Verbosity        int
	// Process is what the run knows of its process (the hint of a login
	// command names the kubeconfig's context of this run's exec entry).
	Process Process
}

// Process is the one seam through which the use cases below pkg/cmd know
// the process they run in: its command line, its environment and the
// default kubeconfig. The commands fill it (pkg/cmd/util's SessionEnv);
// a zero Process knows none of them, and nothing below reads os.Args,
// the environment or the default kubeconfig around it.
type Process struct {
	// Args is the command line without the program's name (os.Args[1:]).
	Args []string
	// Getenv reads the environment.
	Getenv func(string) string
	// Kubeconfig loads the default kubeconfig ($KUBECONFIG, else
	// ~/.kube/config).
	Kubeconfig func() (*clientcmdapi.Config, error)
}

// Notify prints one-line notices on the person's stderr, as one printable
// line: a notice may quote an environment variable or a file of someone
// else's.
func (e Env) Notify(msg string) {
	logging.Notice(e.ErrOut, msg)
}

// Sources builds the token source of a session's settings: NewSource, or
// a test's fake.
type Sources func(a *settings.AuthOptions, env Env) (*tokensource.Source, error)

// A login grant is the authenticator of the base credential source: it
// obtains and refreshes the login's tokens.
type grantFactory func(rt *provider) (tokensource.Authenticator, error)

// An exchange obtains the token kubectl gets, from the base source (the
// login's): it supplies the authenticator of the final source, whose key,
// token choice and renewal margin are credspec's recipe alone.
type exchangeFactory func(rt *provider, base *tokensource.Source) (tokensource.Authenticator, error)

// grants by effective grant type; every grant not listed is a login of
// pkg/idp/login (authcode, keyboard, device code, client credentials).
var grants = map[string]grantFactory{
	credspec.GrantIdentityPlatform: identityPlatformGrant,
}

// exchanges by --exchange.
var exchanges = map[string]exchangeFactory{
	credspec.ExchangeNone: func(_ *provider, base *tokensource.Source) (tokensource.Authenticator, error) {
		return base.NewAuthenticator()
	},
	credspec.ExchangeCloudSigma:    cloudSigmaExchange,
	credspec.ExchangeTokenExchange: tokenExchangeExchange,
}

// provider is what every source is built with: the settings, the store,
// the person's streams, and one login client and HTTP client made on
// first use.
type provider struct {
	a           *settings.AuthOptions
	env         Env
	store       tokencache.Store
	log         *logging.Logger
	audit       *exchange.Auditor
	loginClient *login.Client
}

func newProvider(a *settings.AuthOptions, env Env) (*provider, error) {
	store, err := a.NewStore(env.Notify)
	if err != nil {
		return nil, err
	}
	audit := &exchange.Auditor{File: a.AuditLog}
	if env.Verbosity >= 1 {
		audit.W = env.ErrOut
	}
	return &provider{a: a, env: env, store: store, log: &logging.Logger{W: env.ErrOut, Level: env.Verbosity},
		audit: audit}, nil
}

// NewSource is the token source of a: credspec's recipe (the one the fast
// binary reads with), its authenticator the exchange's over the login's,
// two lookups made only on a cache miss: nothing about the provider is
// set up before.
func NewSource(a *settings.AuthOptions, env Env) (*tokensource.Source, error) {
	rt, err := newProvider(a, env)
	if err != nil {
		return nil, err
	}
	grant, ok := grants[credspec.EffectiveGrant(a.GrantType)]
	if !ok {
		grant = func(rt *provider) (tokensource.Authenticator, error) { return rt.login() }
	}
	exchange, ok := exchanges[a.Exchange]
	if !ok {
		return nil, fmt.Errorf("unknown exchange %q", a.Exchange)
	}
	base := a.BaseSource(rt.store, env.Notify, func() (tokensource.Authenticator, error) { return grant(rt) })
	base.Log, base.NoCooldown = rt.log, env.Person
	src := a.Source(rt.store, env.Notify, func() (tokensource.Authenticator, error) { return exchange(rt, base) })
	src.Log, src.NoCooldown = rt.log, env.Person
	return src, nil
}

// Obtain gets a's token from the source sources builds (the cache when it
// can), and says what a person must do when it cannot.
func Obtain(ctx context.Context, sources Sources, a *settings.AuthOptions, env Env,
	opts tokensource.Options) (*tokensource.Result, error) {
	src, err := sources(a, env)
	if err != nil {
		return nil, err
	}
	r, err := src.Get(ctx, opts)
	if errors.Is(err, login.ErrInteractionRequired) {
		return nil, fmt.Errorf("no valid cached token, and the %s login needs a person, but this plugin runs "+
			"non-interactively (kubectl's interactiveMode, or a client without a terminal): run '%s' in a terminal "+
			"first",
			login.Config{OIDC: a.OIDC}.EffectiveGrant(), LoginCommand(a, env.Process))
	}
	if errors.Is(err, tokensource.ErrRefreshKept) {
		return nil, fmt.Errorf("%w; to log in anew instead: %s", err, LoginCommand(a, env.Process))
	}
	if errors.Is(err, tokensource.ErrCooldown) {
		return nil,
			fmt.Errorf("%w: run '%s' to log in now (--login-cooldown sets the wait)", err, LoginCommand(a, env.Process))
	}
	return r, err
}

// LoginCommand is the command line that logs in with a's settings:
// "login --context=NAME" when the process's default kubeconfig has a
// context whose exec entry is this run's (the current context if it is),
// else login with a's flags.
func LoginCommand(a *settings.AuthOptions, p Process) string {
	if name := contextOf(a, p); name != "" {
		return "kubectl impersonate login " + logging.ShellQuoteArgs([]string{"--context=" + name})[0]
	}
	return strings.Join(append([]string{"kubectl", "impersonate", "login"}, logging.ShellQuoteArgs(a.HintArgs())...),
		" ")
}

// contextOf is the name of a context of the default kubeconfig whose
// exec entry is exactly this run's: its args this process's (get-token's
// name aside), its env this process's values, its session a's identity.
// Not merely the same identity: an entry of someone else's in a merged
// kubeconfig may share the identity and add a browser command, and the
// login its name would start runs that entry's args. "" without one.
func contextOf(a *settings.AuthOptions, p Process) string {
	if p.Kubeconfig == nil || p.Getenv == nil {
		return ""
	}
	raw, err := p.Kubeconfig()
	if err != nil {
		return ""
	}
	sessions, err := List(raw, nil, nil, p.Getenv)
	if err != nil {
		return ""
	}
	args := withoutGetToken(p.Args)
	id, found := a.Key().ID(), ""
	for _, s := range sessions {
		if s.Err != nil || s.Exec == nil || s.Identity() != id || !slices.Equal(withoutGetToken(s.Exec.Args), args) ||
			slices.ContainsFunc(s.Exec.Env,
				func(v clientcmdapi.ExecEnvVar) bool { return p.Getenv(v.Name) != v.Value }) {
			continue
		}
		if s.Context == raw.CurrentContext {
			return s.Context
		}
		if found == "" {
			found = s.Context
		}
	}
	return found
}

// withoutGetToken is an exec entry's args without the subcommand's name
// (the fast binary's entries have none; it hands get-token ARGS on).
func withoutGetToken(args []string) []string {
	if len(args) > 0 && args[0] == "get-token" {
		return args[1:]
	}
	return args
}

// Revoke asks a's provider to revoke token (RFC 7009); hint is its type.
func Revoke(ctx context.Context, a *settings.AuthOptions, env Env, token, hint string) error {
	rt, err := newProvider(a, env)
	if err != nil {
		return err
	}
	lc, err := rt.login()
	if err != nil {
		return err
	}
	return lc.Revoke(ctx, token, hint)
}

func (rt *provider) httpClient() (*http.Client, error) {
	return login.NewHTTPClient(HTTPOptions(rt.a))
}

// loginConfig is the login package's configuration of the settings, with
// the person's streams.
func (rt *provider) loginConfig() (login.Config, error) {
	httpClient, err := rt.httpClient()
	if err != nil {
		return login.Config{}, err
	}
	cfg := login.Config{OIDC: rt.a.OIDC}
	if cfg.Assertion, err = ClientAssertion(rt.a.OIDC, rt.a.ClientID, rt.a.IssuerURL); err != nil {
		return login.Config{}, err
	}
	cfg.HTTPClient, cfg.Interactive, cfg.Stdin, cfg.Stderr = httpClient, rt.env.Interactive, rt.env.In, rt.env.ErrOut
	cfg.StderrIsTerminal = rt.env.StderrIsTerminal
	cfg.Getenv = rt.env.Process.Getenv
	cfg.Log = rt.log
	return cfg, nil
}

// login is the one login client of this run.
func (rt *provider) login() (*login.Client, error) {
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
func identityPlatformGrant(rt *provider) (tokensource.Authenticator, error) {
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
		ToolkitURL: a.IPEndpoint, SecureTokenURL: a.SecureTokenURL, HTTPClient: cfg.HTTPClient, Log: cfg.Log,
		Emulator: a.IPEmulator,
	}, nil
}

// cloudSigmaExchange is CloudSigma's three steps; it has its own service
// identity, so the base login is not used.
func cloudSigmaExchange(rt *provider, _ *tokensource.Source) (tokensource.Authenticator, error) {
	cs := CloudSigma(rt.a)
	var err error
	if cs.HTTPClient, err = rt.httpClient(); err != nil {
		return nil, err
	}
	cs.Audit, cs.Store, cs.LockDir, cs.Notify, cs.Log = rt.audit, rt.store, rt.a.TokenCacheDir, rt.env.Notify, rt.log
	if cs.Assertion, err = ClientAssertion(rt.a.OIDC, cs.ClientID, cs.Issuer()); err != nil {
		return nil, err
	}
	return cs.Authenticator(), nil
}

// tokenExchangeExchange exchanges the base login's token (RFC 8693) at the
// same provider's token endpoint.
func tokenExchangeExchange(rt *provider, base *tokensource.Source) (tokensource.Authenticator, error) {
	a := rt.a
	tx := &exchange.TokenExchange{TokenExchange: a.TokenExchange(), ClientID: a.ClientID, ClientSecret: a.ClientSecret,
		ClientAuthMethod: a.ClientAuthMethod}
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
	if tx.Assertion, err = ClientAssertion(a.OIDC, a.ClientID, a.IssuerURL); err != nil {
		return nil, err
	}
	return tx, nil
}

// ClientAssertion is the client's assertion under settings o (nil when the
// client authenticates with its secret, or is public): a federated one read
// from --oidc-client-assertion-file at each request, or private_key_jwt
// signed with --oidc-client-key-file, its aud issuer unless the settings
// say the token endpoint or another URL. Made on a cache miss only: the
// cached path reads no key.
func ClientAssertion(o credspec.OIDC, clientID, issuer string) (oauth.Assertion, error) {
	switch {
	case o.ClientAssertionFile != "":
		return oauth.AssertionFile(o.ClientAssertionFile), nil
	case o.ClientAuthMethod != credspec.AuthPrivateKeyJWT:
		return nil, nil
	}
	key, err := oauth.LoadKey(o.ClientKeyFile)
	if err != nil {
		return nil, err
	}
	s := &oauth.Signer{ClientID: clientID, Key: key, KeyID: o.ClientKeyID, Audience: issuer}
	if o.ClientCertificateFile != "" {
		if s.Certificate, err = oauth.LoadCertificate(o.ClientCertificateFile); err != nil {
			return nil, err
		}
	}
	switch aud := o.ClientAssertionAudience; aud {
	case "":
	case credspec.AssertionAudienceTokenEndpoint:
		s.Audience = "" // the token endpoint's URL, at each request
	default:
		s.Audience = aud
	}
	return s.Assertion, nil
}

// CloudSigma is the CloudSigma exchange of a, without its runtime seams.
func CloudSigma(a *settings.AuthOptions) *exchange.CloudSigma {
	return &exchange.CloudSigma{
		CloudSigma:   a.CloudSigma(),
		ClientSecret: a.ClientSecret, LegacyPassword: a.CSLegacyPassword, ClientAuthMethod: a.ClientAuthMethod,
	}
}

// HTTPOptions are the provider's HTTP client settings of a.
func HTTPOptions(a *settings.AuthOptions) login.HTTPOptions {
	host := ""
	if u, err := url.Parse(a.IssuerURL); err == nil {
		host = u.Host
	}
	return login.HTTPOptions{CAFiles: a.CertificateAuthorities, CAData: a.CertificateAuthorityData,
		Insecure: a.InsecureSkipTLSVerify,
		Timeout:  a.RequestTimeout, Headers: a.RequestHeaders, HeaderHost: host}
}
