// Package credspec is what selects a token, as values, with their checks.
//
//   - The values: the provider, client and grant of the login, the cache,
//     the exchange and the servers the token may go to.
//   - Their checks, the cache key they lead to, and the one recipe of the
//     credential source (Source).
//   - It binds no flag and links no network code: the fast get-token
//     binary, the commands, the login and the exchanges share it (package
//     settings binds it to flags, profiles and the exec entry's lock).
package credspec

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/environ"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
)

// Spec is what selects a token: the provider, client and grant of the
// login (OIDC), where it is cached (Cache), the exchange that may follow,
// and where it may go (Servers). Values only: package settings binds them
// to flags and profiles, and its Complete fills them.
type Spec struct {
	OIDC
	Cache
	// Exchange selects the exchange: ExchangeNone, ExchangeCloudSigma or
	// ExchangeTokenExchange.
	Exchange string
	// AuditLog is the exchange's audit file.
	AuditLog string
	// ForceRefresh refreshes (or logs in) even when the cached token is
	// valid, as kubelogin's --force-refresh.
	ForceRefresh bool
	CloudSigmaSettings
	TokenExchangeSettings
	IdentityPlatform
	Servers
}

// OIDC selects the OpenID Connect provider, the client and the grant
// of the login (pkg/idp/login).
type OIDC struct {
	IssuerURL        string
	ClientID         string
	ClientSecret     string `datapolicy:"secret"`
	ClientSecretFile string
	// ClientAuthMethod is how the client authenticates at the token
	// endpoint: "basic", "post", "private-key-jwt" (RFC 7523, with
	// ClientKeyFile), or "" (the grant's default).
	ClientAuthMethod string
	// ClientKeyFile is the private key (PEM: RSA or EC) private-key-jwt
	// signs client assertions with; ClientCertificateFile, when given, its
	// certificate, named in the assertion's header (x5t#S256) as Entra ID
	// wants instead of the key's thumbprint.
	ClientKeyFile         string
	ClientCertificateFile string
	// ClientKeyID is the kid of the assertion's header: "" for the key's
	// RFC 7638 thumbprint (or none beside a certificate), "none" for none,
	// or the kid the key is registered with at the provider.
	ClientKeyID string
	// ClientAssertionFile holds a client assertion someone else issues
	// (a projected service account token, a CI job's token), read at every
	// request to the token endpoint: a federated credential.
	ClientAssertionFile string
	// ClientAssertionAudience is the aud of a signed assertion: "" for
	// the issuer, AssertionAudienceTokenEndpoint for the token endpoint,
	// or a URL.
	ClientAssertionAudience string
	ExtraScopes             []string
	GrantType               string
	UseAccessToken          bool
	RedirectURL             string
	// CertificateAuthorities are PEM CA files for the provider (repeatable).
	CertificateAuthorities []string
	InsecureSkipTLSVerify  bool
	ListenAddresses        []string
	BrowserCommand         string
	SkipOpenBrowser        bool
	AuthTimeout            time.Duration
	// RequestTimeout bounds each request to the identity provider.
	RequestTimeout time.Duration
	// LoginCooldown is how long after a failed or abandoned interactive
	// login no other starts for the same identity (0: none).
	LoginCooldown time.Duration
	// CertificateAuthorityData are base64 PEM CAs, as kubelogin's
	// --certificate-authority-data.
	CertificateAuthorityData string
	// AuthRequestExtraParams go into the authorization request (Auth0's
	// audience, Entra's prompt, ADFS's resource).
	AuthRequestExtraParams map[string]string
	// RequestHeaders go with every request to the provider.
	RequestHeaders map[string]string
	// PKCEMethod is auto (S256 unless the discovery document lists
	// methods without it), no, or S256.
	PKCEMethod string
	// LocalServerCert and LocalServerKey serve the loopback redirect over
	// https.
	LocalServerCert, LocalServerKey string
	// OpenURLAfterAuthentication is where the browser goes after a login.
	OpenURLAfterAuthentication string
	// Username and Password are the password grant's (the password from a
	// prompt, --password-file or $KUBECTL_IMPERSONATE_PASSWORD, never argv).
	Username     string
	PasswordFile string
	Password     string `datapolicy:"password"`
}

// Cache selects where tokens are cached (pkg/token/tokencache).
type Cache struct {
	TokenCacheStorage string
	TokenCacheDir     string
}

// CloudSigmaSettings are CloudSigma's impersonation (pkg/idp/exchange).
type CloudSigmaSettings struct {
	CSOAuthURL       string
	CSRegion         string
	CSAPIURL         string
	CSLegacy         bool
	UserEmail        string
	CSLegacyUsername string
	CSLegacyPassword string `datapolicy:"password"`
	// LegacyWithoutOptIn: legacy credentials were found in the
	// environment without the opt-in (Validate refuses them).
	LegacyWithoutOptIn bool
}

// TokenExchangeSettings are RFC 8693 token exchange (pkg/idp/exchange).
type TokenExchangeSettings struct {
	ExchangeAudiences []string
	// ExchangeFromCluster takes the audience from the cluster's exec
	// extension (ForCluster): one login, a token per cluster.
	ExchangeFromCluster bool
	ExchangeScopes      []string
	ExchangeRequested   string
	ExchangeSubject     string
	ImpersonateUser     string
}

// IdentityPlatform are Google Cloud Identity Platform's sign-in
// (pkg/idp/login).
type IdentityPlatform struct {
	IPAPIKey       string
	IPTenant       string
	IPEndpoint     string
	SecureTokenURL string
	GoogleIssuer   string
	IPEmulator     bool
}

// Servers restrict which API servers receive the token.
type Servers struct {
	AllowedServers []string
	// AllowedServerCA pins the CA the allowed servers' kubeconfig cluster
	// must name (a PEM file).
	AllowedServerCA string
}

// DefaultLoginCooldown is how long after a failed or abandoned browser
// login the next kubectl call fails fast instead of opening another.
const DefaultLoginCooldown = time.Minute

// DefaultRequestTimeout bounds one request to the identity provider: a
// kubectl call should fail in seconds, not hang, when the provider does.
const DefaultRequestTimeout = 15 * time.Second

// NewSpec returns the defaults.
func NewSpec() Spec {
	return Spec{
		OIDC: OIDC{GrantType: GrantAuto, AuthTimeout: DefaultAuthTimeout,
			RequestTimeout: DefaultRequestTimeout, PKCEMethod: PKCEAuto, LoginCooldown: DefaultLoginCooldown},
		Cache: Cache{TokenCacheStorage: tokencache.StorageAuto},
		CloudSigmaSettings: CloudSigmaSettings{CSOAuthURL: DefaultCloudSigmaOAuthURL,
			CSAPIURL: DefaultCloudSigmaAPIURL},
		TokenExchangeSettings: TokenExchangeSettings{ExchangeSubject: "access_token"},
		IdentityPlatform: IdentityPlatform{IPEndpoint: DefaultIdentityToolkitURL,
			SecureTokenURL: DefaultSecureTokenURL, GoogleIssuer: DefaultGoogleIssuer},
	}
}

// Validate checks the settings without side effects (the flags given
// without effect are settings' to refuse).
func (o *Spec) Validate() error {
	switch o.Exchange {
	case ExchangeNone, ExchangeTokenExchange:
	case ExchangeCloudSigma:
		if o.LegacyWithoutOptIn {
			return fmt.Errorf("$%s/$%s are legacy credentials, which are off: use a client ($%s/$%s), or opt in with "+
				"$%s=true", EnvCloudSigmaUsername, EnvCloudSigmaPassword, EnvCloudSigmaClientID,
				EnvCloudSigmaClientSecret, EnvCloudSigmaLegacy)
		}
		secret := o.ClientSecret
		if o.ClientAssertion() {
			secret = "(an assertion)" // authenticates the service client instead
		}
		if err := o.CloudSigma().Validate(secret); err != nil {
			return err
		}
		return o.validateCommon()
	default:
		return fmt.Errorf("--%s %q is not one of %s, %s", FlagExchange, o.Exchange, ExchangeCloudSigma,
			ExchangeTokenExchange)
	}
	if o.ExchangeFromCluster && len(o.ExchangeAudiences) > 0 {
		return fmt.Errorf("give --%s or --%s, not both: the audience comes from one place", FlagExchangeAudience,
			FlagExchangeFromCluster)
	}
	if o.IssuerURL == "" {
		return fmt.Errorf("--%s is required (or a --%s that sets it)", FlagIssuerURL, FlagProfile)
	}
	u, err := url.Parse(o.IssuerURL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("--%s %q is not an http(s) URL", FlagIssuerURL, o.IssuerURL)
	}
	if u.Scheme == "http" && !IsLoopbackHost(u.Hostname()) {
		return fmt.Errorf("--%s %q must use https (plain http is allowed for loopback test providers only)",
			FlagIssuerURL, o.IssuerURL)
	}
	if o.ClientID == "" {
		return fmt.Errorf("--%s is required (or a --%s that sets it)", FlagClientID, FlagProfile)
	}
	if !slices.Contains(GrantTypes, o.GrantType) {
		return fmt.Errorf("--%s %q is not one of %s", FlagGrantType, o.GrantType, strings.Join(GrantTypes, ", "))
	}
	return o.validateCommon()
}

// validateCommon checks the settings every mode shares: each group's,
// then what depends on two of them.
func (o *Spec) validateCommon() error {
	for _, v := range []func() error{o.OIDC.Validate, o.Cache.Validate, o.Servers.Validate} {
		if err := v(); err != nil {
			return err
		}
	}
	if o.GrantType == GrantIdentityPlatform {
		if err := o.IdentityPlatform.Validate(); err != nil {
			return err
		}
		if o.ClientSecret == "" {
			return fmt.Errorf("--%s=%s needs the Google OAuth client's secret (Google requires it even for desktop "+
				"clients): --%s or $%s", FlagGrantType, GrantIdentityPlatform, FlagClientSecretFile, EnvClientSecret)
		}
	}
	if o.ClientAssertion() {
		// An assertion authenticates requests the plugin makes itself; x/
		// oauth2's code and device exchanges would send one assertion
		// for many polls, which a provider refuses as a replay. RFC
		// 8693's exchange is the login client's own: its code exchange
		// would go unauthenticated. CloudSigma's has its own client.
		if o.Exchange != ExchangeCloudSigma && o.GrantType != GrantClientCredentials && o.GrantType != GrantPassword {
			return fmt.Errorf("a client assertion (--%s=%s, --%s) authenticates the client-credentials and password "+
				"grants and CloudSigma's exchange, not --%s=%s: a person's login authenticates no client, use a "+
				"public client for it", FlagClientAuthMethod, AuthPrivateKeyJWT, FlagClientAssertionFile, FlagGrantType,
				o.GrantType)
		}
		return nil
	}
	if o.Exchange != ExchangeCloudSigma && o.GrantType == GrantClientCredentials && o.ClientSecret == "" {
		return fmt.Errorf("--%s=%s needs a client secret (--%s or $%s), or an assertion (--%s=%s, --%s)", FlagGrantType,
			GrantClientCredentials, FlagClientSecretFile, EnvClientSecret, FlagClientAuthMethod, AuthPrivateKeyJWT,
			FlagClientAssertionFile)
	}
	return nil
}

// ClientAssertion says the client authenticates with an assertion (a
// signed private_key_jwt, or a federated one read from a file) instead of
// a secret.
func (o *OIDC) ClientAssertion() bool {
	return o.ClientAuthMethod == AuthPrivateKeyJWT || o.ClientAssertionFile != ""
}

// maxKeyID bounds --oidc-client-key-id.
const maxKeyID = 256

// validateAssertion checks the settings of a client assertion.
func (o *OIDC) validateAssertion() error {
	keyed := o.ClientAuthMethod == AuthPrivateKeyJWT
	switch {
	case keyed && o.ClientKeyFile == "":
		return fmt.Errorf("--%s=%s signs with a key: give --%s", FlagClientAuthMethod, AuthPrivateKeyJWT,
			FlagClientKeyFile)
	case !keyed &&
		(o.ClientKeyFile != "" || o.ClientCertificateFile != "" || o.ClientKeyID != "" ||
			o.ClientAssertionAudience != ""):
		return fmt.Errorf("--%s, --%s, --%s and --%s take effect with --%s=%s only", FlagClientKeyFile,
			FlagClientCertFile, FlagClientKeyID, FlagClientAssertionAud, FlagClientAuthMethod, AuthPrivateKeyJWT)
	case keyed && o.ClientAssertionFile != "":
		return fmt.Errorf("give --%s=%s or --%s, not both: one assertion authenticates the client",
			FlagClientAuthMethod, AuthPrivateKeyJWT, FlagClientAssertionFile)
	case o.ClientAssertion() && (o.ClientSecret != "" || o.ClientSecretFile != ""):
		return fmt.Errorf("a client authenticates with an assertion or a secret, not both: drop the secret (--%s, "+
			"$%s) or the assertion", FlagClientSecretFile, EnvClientSecret)
	}
	if k := o.ClientKeyID; len(k) > maxKeyID ||
		strings.IndexFunc(k, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0 {
		return fmt.Errorf("--%s must be at most %d printable ASCII characters without spaces: the kid the key is "+
			"registered with, or none", FlagClientKeyID, maxKeyID)
	}
	if a := o.ClientAssertionAudience; a != "" && a != AssertionAudienceTokenEndpoint {
		if u, err := url.Parse(a); err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("--%s %q is not %s or an https URL", FlagClientAssertionAud, a,
				AssertionAudienceTokenEndpoint)
		}
	}
	return nil
}

// Validate checks the login's settings that stand alone (the issuer and
// client, which an exchange may supply, are checked by AuthOptions).
func (o *OIDC) Validate() error {
	if o.ClientAuthMethod != "" && !slices.Contains(ClientAuthMethods, o.ClientAuthMethod) {
		return fmt.Errorf("--%s %q is not one of %s", FlagClientAuthMethod, o.ClientAuthMethod,
			strings.Join(ClientAuthMethods, ", "))
	}
	if err := o.validateAssertion(); err != nil {
		return err
	}
	for _, a := range o.ListenAddresses {
		if err := validateListenAddress(a); err != nil {
			return err
		}
	}
	if o.RequestTimeout <= 0 {
		return fmt.Errorf("--%s must be positive", FlagRequestTimeout)
	}
	if o.LoginCooldown < 0 {
		return fmt.Errorf("--%s must be 0 (no cooldown) or positive, got %s", FlagLoginCooldown, o.LoginCooldown)
	}
	switch o.PKCEMethod {
	case PKCEAuto, PKCENo, PKCES256:
	default:
		return fmt.Errorf("--%s %q is not one of %s, %s, %s", FlagPKCEMethod, o.PKCEMethod, PKCEAuto, PKCENo, PKCES256)
	}
	for k := range o.AuthRequestExtraParams {
		switch strings.ToLower(k) {
		case "client_id", "redirect_uri", "response_type", "response_mode", "scope", "state", "nonce", "code_challenge",
			"code_challenge_method", "request", "request_uri":
			return fmt.Errorf("--%s %s: that parameter is the login's own (its protections would be replaced)",
				FlagExtraParams, k)
		}
	}
	for k := range o.RequestHeaders {
		switch strings.ToLower(k) {
		case "authorization", "host", "content-type", "content-length", "cookie":
			return fmt.Errorf("--%s %s: that header is the request's own", FlagRequestHeader, k)
		}
	}
	if (o.LocalServerCert == "") != (o.LocalServerKey == "") {
		return fmt.Errorf("--%s and --%s go together", FlagLocalCert, FlagLocalKey)
	}
	if o.RedirectURL != "" && o.GrantType != GrantAuthCodeKeyboard {
		u, err := url.Parse(o.RedirectURL)
		port := 0
		if u != nil {
			port, _ = strconv.Atoi(u.Port())
		}
		// The loopback server binds 127.0.0.1: the redirect must name it
		// (or localhost), never another address another local user could
		// listen on.
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || port < 1 || port > 65535 ||
			(u.Hostname() != "localhost" && u.Hostname() != "127.0.0.1") || u.User != nil {
			return fmt.Errorf("--%s %q: the browser login's redirect must be http(s)://localhost:PORT/... or "+
				"http(s)://127.0.0.1:PORT/... (the loopback server binds 127.0.0.1)", FlagRedirectURL, o.RedirectURL)
		}
		if (u.Scheme == "https") != (o.LocalServerCert != "") {
			return fmt.Errorf("--%s %q: https needs --%s and --%s, and they need an https redirect", FlagRedirectURL,
				o.RedirectURL, FlagLocalCert, FlagLocalKey)
		}
	}
	if o.OpenURLAfterAuthentication != "" {
		u, err := url.Parse(o.OpenURLAfterAuthentication)
		if err != nil || u.Host == "" ||
			(u.Scheme != "https" && !(u.Scheme == "http" && IsLoopbackHost(u.Hostname()))) {
			return fmt.Errorf("--%s %q is not an https URL", FlagOpenAfterAuth, o.OpenURLAfterAuthentication)
		}
	}
	if o.GrantType == GrantPassword && o.Username == "" {
		return fmt.Errorf("--%s=%s needs --%s", FlagGrantType, GrantPassword, FlagUsername)
	}
	if o.AuthTimeout <= 0 {
		return fmt.Errorf("--%s must be positive", FlagAuthTimeout)
	}
	return nil
}

// Validate checks the storage.
func (o *Cache) Validate() error {
	if !slices.Contains(tokencache.Storages, o.TokenCacheStorage) {
		return fmt.Errorf("--%s %q is not one of %s", FlagStorage, o.TokenCacheStorage,
			strings.Join(tokencache.Storages, ", "))
	}
	return nil
}

// Complete puts the cache under ~/.kube/cache unless told otherwise;
// getenv reads the environment (the home directory).
func (o *Cache) Complete(getenv func(string) string) error {
	if o.TokenCacheDir == "" {
		home, err := environ.HomeDir(getenv)
		if err != nil {
			return fmt.Errorf("finding the home directory for the token cache: %w (set --%s)", err, FlagCacheDir)
		}
		o.TokenCacheDir = filepath.Join(home, ".kube", "cache", "kubectl-impersonate")
	}
	o.TokenCacheDir = ExpandHome(getenv, o.TokenCacheDir)
	return nil
}

// Validate checks the sign-in's settings.
func (o *IdentityPlatform) Validate() error {
	if o.IPAPIKey == "" {
		return fmt.Errorf("--%s=%s needs --%s (the project's Web API key)", FlagGrantType, GrantIdentityPlatform,
			FlagIPAPIKey)
	}
	if o.IPEmulator {
		for _, e := range []string{o.IPEndpoint, o.SecureTokenURL} {
			if u, err := url.Parse(e); err != nil || !IsLoopbackHost(u.Hostname()) {
				return fmt.Errorf("--identity-platform-emulator accepts unsigned tokens, so its endpoints must be on "+
					"loopback: %q is not", e)
			}
		}
	}
	return nil
}

// Validate checks the allowed servers are URLs, and that a CA pin has
// servers to hold for (alone it would pin nothing: CheckAllowedServer
// checks the pin of an allowed server).
func (o *Servers) Validate() error {
	if o.AllowedServerCA != "" && len(o.AllowedServers) == 0 {
		return fmt.Errorf("--%s pins the CA of the allowed servers: give --%s too (profile keys allowedServers and "+
			"allowedServerCertificateAuthority)", FlagAllowedServerCA, FlagAllowedServer)
	}
	for _, s := range o.AllowedServers {
		if u, err := url.Parse(s); err != nil || u.Host == "" {
			return fmt.Errorf("--%s %q is not a URL such as https://api.example.com:6443", FlagAllowedServer, s)
		}
	}
	return nil
}

// CloudSigma is the CloudSigma impersonation these settings select.
func (o *Spec) CloudSigma() CloudSigma {
	return CloudSigma{
		OAuthURL: o.CSOAuthURL, APIURLTemplate: o.CSAPIURL, Region: o.CSRegion, UserEmail: o.UserEmail,
		ClientID: o.ClientID, LegacyUsername: o.CSLegacyUsername,
	}
}

func validateListenAddress(a string) error {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Errorf("--%s %q is not host:port: %v", FlagListen, a, err)
	}
	if !IsLoopbackHost(host) {
		return fmt.Errorf("--%s %q must be a loopback address (127.0.0.1, [::1] or localhost), so that no other "+
			"machine can reach the login callback", FlagListen, a)
	}
	if port == "" {
		return fmt.Errorf("--%s %q has no port (use :0 for any free port)", FlagListen, a)
	}
	return nil
}

// ExpandHome expands a leading ~/ to the home directory, as getenv gives
// it.
func ExpandHome(getenv func(string) string, p string) string {
	if !strings.HasPrefix(p, "~/") {
		return p
	}
	home, err := environ.HomeDir(getenv)
	if err != nil {
		return p
	}
	return filepath.Join(home, p[2:])
}
