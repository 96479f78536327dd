package settings

import (
	"encoding/pem"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/config"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/execcred"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/tokencache"
)

// EnvClientSecret holds the client secret, so it stays out of argv.
const EnvClientSecret = "KUBECTL_IMPERSONATE_CLIENT_SECRET"

// EnvPassword holds the password of --grant-type=password, so it stays out
// of argv.
const EnvPassword = "KUBECTL_IMPERSONATE_PASSWORD"

// Flag names shared by get-token, login, setup and logout.
const (
	flagProfile          = "profile"
	flagIssuerURL        = "oidc-issuer-url"
	flagClientID         = "oidc-client-id"
	flagClientSecret     = "oidc-client-secret"
	flagClientSecretFile = "oidc-client-secret-file"
	flagExtraScope       = "oidc-extra-scope"
	flagUseAccessToken   = "oidc-use-access-token"
	flagRedirectURL      = "oidc-redirect-url"
	flagExtraParams      = "oidc-auth-request-extra-params"
	flagRequestHeader    = "oidc-request-header"
	flagPKCEMethod       = "oidc-pkce-method"
	flagLocalCert        = "local-server-cert"
	flagLocalKey         = "local-server-key"
	flagOpenAfterAuth    = "open-url-after-authentication"
	flagCAData           = "certificate-authority-data"
	flagForceRefresh     = "force-refresh"
	flagUsername         = "username"
	flagPasswordFile     = "password-file"
	flagGrantType        = "grant-type"
	flagStorage          = "token-cache-storage"
	flagCacheDir         = "token-cache-dir"
	flagCA               = "oidc-certificate-authority"
	flagInsecure         = "insecure-skip-tls-verify"
	flagListen           = "listen-address"
	flagBrowserCommand   = "browser-command"
	flagSkipOpenBrowser  = "skip-open-browser"
	flagAuthTimeout      = "authentication-timeout"
	flagRequestTimeout   = "idp-request-timeout"
	flagLoginCooldown    = "login-cooldown"

	flagExchange            = "exchange"
	flagCSOAuthURL          = "cloudsigma-oauth-url"
	flagCSRegion            = "cloudsigma-region"
	flagCSAPIURL            = "cloudsigma-api-url"
	flagCSLegacy            = "cloudsigma-enable-legacy-credentials"
	flagUserEmail           = "impersonate-user-email"
	flagExchangeAudience    = "exchange-audience"
	flagExchangeFromCluster = "exchange-audience-from-cluster"
	flagExchangeScope       = "exchange-scope"
	flagExchangeRequested   = "exchange-requested-token-type"
	flagExchangeSubjectType = "exchange-subject-token-type"
	flagImpersonateUser     = "impersonate-user"
	flagAuditLog            = "exchange-audit-log"
	flagAllowedServer       = "allowed-server"
	flagAllowedServerCA     = "allowed-server-certificate-authority"
	flagClientAuthMethod    = "oidc-client-auth-method"
	flagIPAPIKey            = "identity-platform-api-key"
	flagIPTenant            = "identity-platform-tenant"
	flagIPEndpoint          = "identity-platform-endpoint"
	flagSecureTokenEndpoint = "securetoken-endpoint"
	flagGoogleIssuer        = "google-issuer-url"
	flagIPEmulator          = "identity-platform-emulator"
)

// Identity Platform endpoints.
const (
	DefaultIdentityToolkitURL = "https://identitytoolkit.googleapis.com"
	DefaultSecureTokenURL     = "https://securetoken.googleapis.com"
	DefaultGoogleIssuer       = "https://accounts.google.com"
)

// Flag names that other packages refer to in messages.
const (
	FlagExchange         = flagExchange
	FlagAllowedServer    = flagAllowedServer
	FlagClientSecretFile = flagClientSecretFile
)

// PKCE methods accepted by --oidc-pkce-method.
const (
	PKCEAuto = "auto"
	PKCENo   = "no"
	PKCES256 = "S256"
)

// Exchanges accepted by --exchange.
const (
	ExchangeNone          = ""
	ExchangeCloudSigma    = "cloudsigma"
	ExchangeTokenExchange = "token-exchange"
)

// Environment of the CloudSigma controller, honoured with --exchange=cloudsigma.
const (
	envCSClientID     = "CLOUDSIGMA_CLIENT_ID"
	envCSOAuthURL     = "CLOUDSIGMA_OAUTH_URL"
	envCSRegion       = "CLOUDSIGMA_REGION"
	envCSClientSecret = "CLOUDSIGMA_CLIENT_SECRET"
	envCSLegacy       = "CLOUDSIGMA_ENABLE_LEGACY_CREDENTIALS"
	envCSUsername     = "CLOUDSIGMA_USERNAME"
	envCSPassword     = "CLOUDSIGMA_PASSWORD"
)

// profileAliases maps profile keys in the style of other tools' configs to
// flag names.
var profileAliases = map[string]string{"allowedServers": flagAllowedServer, "allowed-servers": flagAllowedServer,
	"allowedServerCertificateAuthority": flagAllowedServerCA, flagAliasCA: flagCA, flagAliasAuditLog: flagAuditLog}

// Older names still accepted, hidden from --help: --certificate-authority is
// kubelogin's name for the provider's CA (in the inspection commands it is
// the cluster's, as in kubectl); --audit-log was get-token's name before the
// proxy's --audit-log (every request) made it ambiguous. Kubeconfigs written
// with them keep working; setup writes the new names.
const (
	flagAliasCA       = "certificate-authority"
	flagAliasAuditLog = "audit-log"
)

// profileFileKeys are the settings that name a file or directory.
var profileFileKeys = map[string]bool{flagClientSecretFile: true, flagPasswordFile: true, flagCA: true, flagLocalCert: true,
	flagLocalKey: true, flagAuditLog: true, flagCacheDir: true, flagAllowedServerCA: true}

// secretFlags never appear in a generated kubeconfig.
var secretFlags = []string{flagClientSecret}

// AuthOptions are the settings that select an identity provider, a grant,
// an exchange and a cache: shared by get-token, login, setup and logout (and
// by the fast get-token binary, which is why they live here and not in the
// packages that use them: this package links no network code). Each concern
// is a group with its own flags and checks; AuthOptions composes them and
// checks what depends on several (which grant an exchange needs).
type AuthOptions struct {
	Profile string
	OIDCOptions
	CacheOptions
	// Exchange selects the exchange: ExchangeNone, ExchangeCloudSigma or
	// ExchangeTokenExchange.
	Exchange string
	// AuditLog is the exchange's audit file.
	AuditLog string
	// ForceRefresh refreshes (or logs in) even when the cached token is
	// valid, as kubelogin's --force-refresh.
	ForceRefresh bool
	CloudSigmaOptions
	TokenExchangeOptions
	IdentityPlatformOptions
	ServerOptions

	// FromExecEntry says the flags and environment are a kubeconfig exec
	// entry's (get-token), not the user's own command line: see trust.go.
	FromExecEntry bool
	// EntryEnv names the environment variables the exec entry sets, when
	// the caller read the entry (nil: told from kubectl's environment).
	EntryEnv []string
	// KubectlEnv returns kubectl's own environment (stubbable for tests;
	// nil: read from the parent process where the platform allows); the
	// error is errEnvNotRead where the platform does not.
	KubectlEnv func() (map[string]string, error)
	// Environ is this process's environment (stubbable; nil: os.Environ).
	Environ        func() []string
	kubectlEnvMap  map[string]string
	kubectlEnvErr  error
	kubectlEnvRead bool

	flags *pflag.FlagSet
	// names are the flags AddFlags registered: the command may have more.
	names map[string]bool
	// profileKeys are the flags the profile set, profileServers its
	// allowedServers.
	profileKeys    map[string]bool
	profileServers []string
	// secretFromFlag is set when the secret was given on the command line.
	secretFromFlag bool
	// userSet are the flags the user's own command line set over an exec
	// entry's (login, logout): not the entry's, so not under its lock.
	userSet map[string]bool
}

// OIDCOptions select the OpenID Connect provider, the client and the grant
// of the login (pkg/login).
type OIDCOptions struct {
	IssuerURL        string
	ClientID         string
	ClientSecret     string `datapolicy:"secret"`
	ClientSecretFile string
	// ClientAuthMethod is how the client authenticates at the token
	// endpoint: "basic", "post", or "" (the grant's default).
	ClientAuthMethod string
	ExtraScopes      []string
	GrantType        string
	UseAccessToken   bool
	RedirectURL      string
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

// CacheOptions select where tokens are cached (pkg/tokencache).
type CacheOptions struct {
	TokenCacheStorage string
	TokenCacheDir     string
}

// CloudSigmaOptions are CloudSigma's impersonation (pkg/exchange).
type CloudSigmaOptions struct {
	CSOAuthURL         string
	CSRegion           string
	CSAPIURL           string
	CSLegacy           bool
	UserEmail          string
	CSLegacyUsername   string
	CSLegacyPassword   string `datapolicy:"password"`
	legacyWithoutOptIn bool
}

// TokenExchangeOptions are RFC 8693 token exchange (pkg/exchange).
type TokenExchangeOptions struct {
	ExchangeAudiences []string
	// ExchangeFromCluster takes the audience from the cluster's exec
	// extension (ForCluster): one login, a token per cluster.
	ExchangeFromCluster bool
	ExchangeScopes      []string
	ExchangeRequested   string
	ExchangeSubject     string
	ImpersonateUser     string
}

// IdentityPlatformOptions are Google Cloud Identity Platform's sign-in
// (pkg/login).
type IdentityPlatformOptions struct {
	IPAPIKey       string
	IPTenant       string
	IPEndpoint     string
	SecureTokenURL string
	GoogleIssuer   string
	IPEmulator     bool
}

// ServerOptions restrict which API servers receive the token.
type ServerOptions struct {
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

// NewAuthOptions returns the defaults.
func NewAuthOptions() *AuthOptions {
	return &AuthOptions{
		OIDCOptions:             OIDCOptions{GrantType: GrantAuto, AuthTimeout: DefaultAuthTimeout, RequestTimeout: DefaultRequestTimeout, PKCEMethod: PKCEAuto, LoginCooldown: DefaultLoginCooldown},
		CacheOptions:            CacheOptions{TokenCacheStorage: tokencache.StorageAuto},
		CloudSigmaOptions:       CloudSigmaOptions{CSOAuthURL: DefaultCloudSigmaOAuthURL, CSAPIURL: DefaultCloudSigmaAPIURL},
		TokenExchangeOptions:    TokenExchangeOptions{ExchangeSubject: "access_token"},
		IdentityPlatformOptions: IdentityPlatformOptions{IPEndpoint: DefaultIdentityToolkitURL, SecureTokenURL: DefaultSecureTokenURL, GoogleIssuer: DefaultGoogleIssuer},
	}
}

// AddFlags binds the options to fs: each group's flags.
func (o *AuthOptions) AddFlags(fs *pflag.FlagSet) {
	o.flags = fs
	fs.StringVar(&o.Profile, flagProfile, o.Profile, "Read these settings from a profile of the profiles file (see docs/profiles.md); flags override it")
	fs.StringVar(&o.Exchange, flagExchange, o.Exchange, "Exchange the token for one that acts as another user: cloudsigma or token-exchange (unset: no exchange)")
	fs.StringVar(&o.AuditLog, flagAuditLog, o.AuditLog, "Append one JSON line per exchange step to this file (never a token)")
	fs.BoolVar(&o.ForceRefresh, flagForceRefresh, o.ForceRefresh, "Refresh the token (or log in) even when the cached one is valid")
	o.OIDCOptions.AddFlags(fs)
	o.CacheOptions.AddFlags(fs)
	o.CloudSigmaOptions.AddFlags(fs)
	o.TokenExchangeOptions.AddFlags(fs)
	o.IdentityPlatformOptions.AddFlags(fs)
	o.ServerOptions.AddFlags(fs)
	o.names = map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) { o.names[f.Name] = true })
	AliasFlag(fs, flagAliasCA, flagCA, nil)
	AliasFlag(fs, flagAliasAuditLog, flagAuditLog, nil)
}

// AddFlags binds the login's flags.
func (o *OIDCOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.IssuerURL, flagIssuerURL, o.IssuerURL, "Issuer URL of the OIDC provider (required)")
	fs.StringVar(&o.ClientID, flagClientID, o.ClientID, "OAuth client ID (required)")
	fs.StringVar(&o.ClientSecret, flagClientSecret, o.ClientSecret, "OAuth client secret. Visible in the process list: prefer --"+flagClientSecretFile+" or $"+EnvClientSecret)
	fs.StringVar(&o.ClientSecretFile, flagClientSecretFile, o.ClientSecretFile, "File holding the OAuth client secret")
	fs.StringVar(&o.ClientAuthMethod, flagClientAuthMethod, o.ClientAuthMethod, "How a confidential client authenticates at the token endpoint: basic (HTTP Basic) or post (in the form body); default: post for CloudSigma, basic for token exchange, either for logins")
	fs.StringSliceVar(&o.ExtraScopes, flagExtraScope, o.ExtraScopes, "Scope to request besides openid (repeatable, or comma-separated)")
	fs.StringVar(&o.GrantType, flagGrantType, o.GrantType, "Grant: "+strings.Join(GrantTypes, "|")+" (auto: authcode for people; device-code where no browser can be shown, over SSH or without a display, if the provider offers it)")
	fs.BoolVar(&o.UseAccessToken, flagUseAccessToken, o.UseAccessToken, "Give kubectl the access token instead of the ID token")
	fs.StringVar(&o.RedirectURL, flagRedirectURL, o.RedirectURL, "[authcode] the loopback redirect URL the provider has registered, e.g. http://localhost:8000/ (default: a free port); [authcode-keyboard] the redirect URL (default "+OOBRedirectURL+")")
	fs.StringToStringVar(&o.AuthRequestExtraParams, flagExtraParams, o.AuthRequestExtraParams, "[authcode, authcode-keyboard] extra parameter of the authorization request, key=value (Auth0 audience, Entra prompt, ADFS resource); repeatable")
	fs.StringToStringVar(&o.RequestHeaders, flagRequestHeader, o.RequestHeaders, "HTTP header sent with every request to the issuer's host (never to another host), key=value; repeatable; the value is written into the kubeconfig's args by setup")
	fs.StringVar(&o.PKCEMethod, flagPKCEMethod, o.PKCEMethod, "[authcode, authcode-keyboard] PKCE: auto (S256 unless the discovery document lists other methods only), no, or S256")
	fs.StringVar(&o.LocalServerCert, flagLocalCert, o.LocalServerCert, "[authcode] certificate (PEM) to serve the loopback redirect over https")
	fs.StringVar(&o.LocalServerKey, flagLocalKey, o.LocalServerKey, "[authcode] key (PEM) of --"+flagLocalCert)
	fs.StringVar(&o.OpenURLAfterAuthentication, flagOpenAfterAuth, o.OpenURLAfterAuthentication, "[authcode] send the browser to this https URL after the login (successful or not: the terminal says which)")
	fs.StringVar(&o.CertificateAuthorityData, flagCAData, o.CertificateAuthorityData, "Base64 PEM of CAs for the identity provider, added to the system roots")
	fs.StringVar(&o.Username, flagUsername, o.Username, "[password] the username; the password comes from a prompt, --"+flagPasswordFile+" or $"+EnvPassword+", never the command line")
	fs.StringVar(&o.PasswordFile, flagPasswordFile, o.PasswordFile, "[password] file holding the password")
	fs.StringArrayVar(&o.CertificateAuthorities, flagCA, o.CertificateAuthorities, "PEM file of CAs for the identity provider, added to the system roots; repeatable (also --"+flagAliasCA+", kubelogin's name)")
	fs.BoolVar(&o.InsecureSkipTLSVerify, flagInsecure, o.InsecureSkipTLSVerify, "Do not verify the identity provider's TLS certificate (insecure)")
	fs.StringSliceVar(&o.ListenAddresses, flagListen, o.ListenAddresses, "[authcode] loopback address of the local server for the browser login, tried in order (default "+strings.Join(DefaultListenAddresses, ",")+")")
	fs.StringVar(&o.BrowserCommand, flagBrowserCommand, o.BrowserCommand, "[authcode, device-code] command that opens the login URL (default: the system's)")
	fs.BoolVar(&o.SkipOpenBrowser, flagSkipOpenBrowser, o.SkipOpenBrowser, "[authcode, device-code] print the login URL without opening a browser")
	fs.DurationVar(&o.AuthTimeout, flagAuthTimeout, o.AuthTimeout, "[authcode, authcode-keyboard, device-code] how long to wait for the login in the browser or on the device page")
	fs.DurationVar(&o.RequestTimeout, flagRequestTimeout, o.RequestTimeout, "How long to wait for each answer of the identity provider (and the exchange's endpoints)")
	fs.DurationVar(&o.LoginCooldown, flagLoginCooldown, o.LoginCooldown, "[authcode, authcode-keyboard, device-code] after a login that failed or was abandoned, how long further calls for the same identity fail at once instead of opening another (0: no cooldown; login itself ignores it)")
}

// AddFlags binds the cache's flags.
func (o *CacheOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.TokenCacheStorage, flagStorage, o.TokenCacheStorage, "Where tokens are cached: "+strings.Join(tokencache.Storages, "|")+" (auto: the OS keyring, else disk)")
	fs.StringVar(&o.TokenCacheDir, flagCacheDir, o.TokenCacheDir, "Directory of the disk cache and the lock files (default ~/.kube/cache/kubectl-impersonate)")
}

// AddFlags binds CloudSigma's flags.
func (o *CloudSigmaOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.CSOAuthURL, flagCSOAuthURL, o.CSOAuthURL, "CloudSigma's Keycloak (realm cloudsigma); unset: $"+envCSOAuthURL+", else the default")
	fs.StringVar(&o.CSRegion, flagCSRegion, o.CSRegion, "CloudSigma region (location) of the user, e.g. zrh; unset: $"+envCSRegion)
	fs.StringVar(&o.CSAPIURL, flagCSAPIURL, o.CSAPIURL, "CloudSigma API URL template; {region} is replaced")
	fs.BoolVar(&o.CSLegacy, flagCSLegacy, o.CSLegacy, "Allow legacy $"+envCSUsername+"/$"+envCSPassword+" for the service identity (or $"+envCSLegacy+"=true)")
	fs.StringVar(&o.UserEmail, flagUserEmail, o.UserEmail, "With --exchange=cloudsigma: the email of the user to act as")
}

// AddFlags binds token exchange's flags.
func (o *TokenExchangeOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.ExchangeAudiences, flagExchangeAudience, o.ExchangeAudiences, "With --exchange=token-exchange: audience to request (repeatable)")
	fs.BoolVar(&o.ExchangeFromCluster, flagExchangeFromCluster, o.ExchangeFromCluster, "With --exchange=token-exchange: the audience is the one the cluster's kubeconfig extension "+ExecExtensionName+" names (audience: NAME; needs provideClusterInfo: true); a cluster without one gets the login's token (setup --cluster-audience writes them)")
	fs.StringSliceVar(&o.ExchangeScopes, flagExchangeScope, o.ExchangeScopes, "With --exchange=token-exchange: scope to request (repeatable)")
	fs.StringVar(&o.ExchangeRequested, flagExchangeRequested, o.ExchangeRequested, "With --exchange=token-exchange: requested_token_type (access_token, id_token, refresh_token or a URN)")
	fs.StringVar(&o.ExchangeSubject, flagExchangeSubjectType, o.ExchangeSubject, "With --exchange=token-exchange: which token of the login to exchange (access_token or id_token)")
	fs.StringVar(&o.ImpersonateUser, flagImpersonateUser, o.ImpersonateUser, "With --exchange=token-exchange: the user to act as (Keycloak V1 requested_subject)")
}

// AddFlags binds Identity Platform's flags.
func (o *IdentityPlatformOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.IPAPIKey, flagIPAPIKey, o.IPAPIKey, "With --grant-type=identity-platform: the project's Web API key")
	fs.StringVar(&o.IPTenant, flagIPTenant, o.IPTenant, "With --grant-type=identity-platform: the Identity Platform tenant, if any")
	fs.StringVar(&o.IPEndpoint, flagIPEndpoint, o.IPEndpoint, "Identity Toolkit API endpoint (tests, emulators)")
	fs.StringVar(&o.SecureTokenURL, flagSecureTokenEndpoint, o.SecureTokenURL, "Secure Token API endpoint (tests, emulators)")
	fs.BoolVar(&o.IPEmulator, flagIPEmulator, o.IPEmulator, "Accept the Firebase Auth emulator's unsigned tokens (its endpoints must be on loopback)")
	fs.StringVar(&o.GoogleIssuer, flagGoogleIssuer, o.GoogleIssuer, "With --grant-type=identity-platform: the issuer of the Google sign-in")
}

// AddFlags binds the allowed servers' flags.
func (o *ServerOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.AllowedServers, flagAllowedServer, o.AllowedServers, "Hand tokens only to these API servers (needs provideClusterInfo: true); repeatable; on the command line it may only narrow a profile's allowedServers")
	fs.StringVar(&o.AllowedServerCA, flagAllowedServerCA, o.AllowedServerCA, "With --allowed-server: the kubeconfig cluster must name exactly these CA certificates (PEM file; profile key allowedServerCertificateAuthority)")
}

// Complete applies the profile, reads the client secret and fills defaults.
func (o *AuthOptions) Complete(getenv func(string) string, warn func(string)) error {
	if o.changed(flagAllowedServer) && (len(o.AllowedServers) == 0 || slices.Contains(o.AllowedServers, "")) {
		return fmt.Errorf("--%s needs a server URL such as https://api.example.com:6443: an empty value would lift the limit", flagAllowedServer)
	}
	if o.Profile != "" {
		if err := o.applyProfile(getenv, warn); err != nil {
			return err
		}
	}
	if o.FromExecEntry {
		if err := o.checkExecEntry(getenv); err != nil {
			return err
		}
	}
	o.secretFromFlag = o.flags != nil && o.flags.Changed(flagClientSecret)
	if o.secretFromFlag {
		warn("--" + flagClientSecret + " is visible to other users in the process list: use --" + flagClientSecretFile + " or $" + EnvClientSecret)
	}
	if o.ClientSecretFile != "" {
		if o.ClientSecret != "" {
			return fmt.Errorf("give the client secret once: --%s or --%s, not both", flagClientSecret, flagClientSecretFile)
		}
		var err error
		if o.ClientSecret, err = readSecretFile(flagClientSecretFile, "client secret", o.ClientSecretFile, warn); err != nil {
			return err
		}
		// As before: a client secret is a token, never padded (a password
		// may begin or end with a space, and keeps it).
		if o.ClientSecret = strings.TrimSpace(o.ClientSecret); o.ClientSecret == "" {
			return fmt.Errorf("--%s %s holds only white space: write the client secret into it", flagClientSecretFile, o.ClientSecretFile)
		}
	}
	if o.ClientSecret == "" {
		o.ClientSecret = getenv(EnvClientSecret)
	}
	if o.PasswordFile != "" {
		var err error
		if o.Password, err = readSecretFile(flagPasswordFile, "password", o.PasswordFile, warn); err != nil {
			return err
		}
	}
	if o.Password == "" {
		o.Password = getenv(EnvPassword)
	}
	if o.Exchange == ExchangeCloudSigma {
		if o.ClientID == "" {
			o.ClientID = getenv(envCSClientID)
		}
		// The deployment's own variables; flags and profiles win.
		if v := getenv(envCSOAuthURL); v != "" && o.CSOAuthURL == DefaultCloudSigmaOAuthURL && !o.changed(flagCSOAuthURL) {
			o.CSOAuthURL = v
		}
		if v := getenv(envCSRegion); v != "" && o.CSRegion == "" {
			o.CSRegion = v
		}
		if o.ClientSecret == "" {
			o.ClientSecret = getenv(envCSClientSecret)
		}
		if getenv(envCSLegacy) == "true" {
			o.CSLegacy = true
		}
		user, pass := getenv(envCSUsername), getenv(envCSPassword)
		if user != "" && o.ClientSecret == "" {
			if o.CSLegacy {
				o.CSLegacyUsername, o.CSLegacyPassword = user, pass
			} else {
				o.legacyWithoutOptIn = true
			}
		}
	}
	o.AuditLog = expandHome(o.AuditLog)
	o.AllowedServerCA = expandHome(o.AllowedServerCA)
	for i, ca := range o.CertificateAuthorities {
		o.CertificateAuthorities[i] = expandHome(ca)
	}
	o.PasswordFile = expandHome(o.PasswordFile)
	return o.CacheOptions.Complete()
}

func expandHome(p string) string {
	if !strings.HasPrefix(p, "~/") {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return p
	}
	return filepath.Join(home, p[2:])
}

// applyProfile sets every flag the command line left alone from the profile.
func (o *AuthOptions) applyProfile(getenv func(string) string, warn func(string)) error {
	path, err := config.DefaultPath(getenv)
	if err != nil {
		return err
	}
	file, err := config.Load(path)
	if err != nil {
		return err
	}
	settings, err := file.Profile(o.Profile)
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, raw := range keys {
		key := raw
		if alias, ok := profileAliases[raw]; ok {
			key = alias
		}
		f := o.flags.Lookup(key)
		if f == nil || !o.names[key] || key == flagProfile {
			return fmt.Errorf("profile %q in %s: unknown key %q (keys are the long flag names of get-token)", o.Profile, path, key)
		}
		if slices.Contains(secretFlags, key) && file.ReadableByOthers {
			return fmt.Errorf("profile %q holds a client secret but %s is readable by others: chmod 600 %s", o.Profile, path, path)
		}
		values, err := config.Values(settings[raw])
		if err != nil {
			return fmt.Errorf("profile %q in %s: key %q: %w", o.Profile, path, key, err)
		}
		if o.profileKeys == nil {
			o.profileKeys = map[string]bool{}
		}
		o.profileKeys[key] = true
		if key == flagAllowedServer {
			if len(values) == 0 || slices.Contains(values, "") {
				return fmt.Errorf("profile %q in %s: allowedServers needs server URLs such as https://api.example.com:6443: an empty one would lift the limit", o.Profile, path)
			}
			o.profileServers = values
		}
		// A relative path would be read from kubectl's working directory,
		// wherever that is (a cloned repository of someone else's).
		if profileFileKeys[key] {
			for _, v := range values {
				if !filepath.IsAbs(v) && !strings.HasPrefix(v, "~/") {
					return fmt.Errorf("profile %q in %s: key %q: %q is a relative path: give an absolute one (or ~/...)", o.Profile, path, raw, v)
				}
			}
		}
		if f.Changed {
			// The profile's allowed servers are a limit: the command line
			// (which a kubeconfig's exec entry writes) may only narrow it.
			if key == flagAllowedServer {
				for _, s := range o.AllowedServers {
					if !slices.ContainsFunc(values, func(v string) bool { return sameServer(v, s) }) {
						return fmt.Errorf("--%s %q is not among the allowedServers of profile %q (%s): on the command line it may only narrow them", flagAllowedServer, s, o.Profile, strings.Join(values, ", "))
					}
				}
			}
			if key == flagAllowedServerCA && o.AllowedServerCA != expandHome(values[0]) && o.AllowedServerCA != values[0] {
				return fmt.Errorf("--%s differs from profile %q's: the command line may not replace it", flagAllowedServerCA, o.Profile)
			}
			continue
		}
		for _, v := range values {
			// Value.Set, not FlagSet.Set: the flag stays "not changed", so
			// setup keeps writing --profile rather than the profile's values.
			if err := f.Value.Set(v); err != nil {
				return fmt.Errorf("profile %q in %s: key %q: %w", o.Profile, path, key, err)
			}
		}
	}
	return nil
}

// Validate checks the settings without side effects.
func (o *AuthOptions) Validate() error {
	switch o.Exchange {
	case ExchangeNone, ExchangeTokenExchange:
	case ExchangeCloudSigma:
		if o.legacyWithoutOptIn {
			return fmt.Errorf("$%s/$%s are legacy credentials, which are off: use a client ($%s/$%s), or opt in with $%s=true", envCSUsername, envCSPassword, envCSClientID, envCSClientSecret, envCSLegacy)
		}
		if err := o.CloudSigma().Validate(o.ClientSecret); err != nil {
			return err
		}
		return o.validateCommon()
	default:
		return fmt.Errorf("--%s %q is not one of %s, %s", flagExchange, o.Exchange, ExchangeCloudSigma, ExchangeTokenExchange)
	}
	if o.Exchange != ExchangeTokenExchange {
		for _, f := range []string{flagExchangeAudience, flagExchangeFromCluster, flagExchangeScope, flagExchangeRequested, flagImpersonateUser} {
			if o.flags != nil && o.flags.Changed(f) {
				return fmt.Errorf("--%s takes effect with --%s=%s only", f, flagExchange, ExchangeTokenExchange)
			}
		}
	}
	if o.ExchangeFromCluster && len(o.ExchangeAudiences) > 0 {
		return fmt.Errorf("give --%s or --%s, not both: the audience comes from one place", flagExchangeAudience, flagExchangeFromCluster)
	}
	if o.IssuerURL == "" {
		return fmt.Errorf("--%s is required (or a --%s that sets it)", flagIssuerURL, flagProfile)
	}
	u, err := url.Parse(o.IssuerURL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("--%s %q is not an http(s) URL", flagIssuerURL, o.IssuerURL)
	}
	if u.Scheme == "http" && !IsLoopbackHost(u.Hostname()) {
		return fmt.Errorf("--%s %q must use https (plain http is allowed for loopback test providers only)", flagIssuerURL, o.IssuerURL)
	}
	if o.ClientID == "" {
		return fmt.Errorf("--%s is required (or a --%s that sets it)", flagClientID, flagProfile)
	}
	if !slices.Contains(GrantTypes, o.GrantType) {
		return fmt.Errorf("--%s %q is not one of %s", flagGrantType, o.GrantType, strings.Join(GrantTypes, ", "))
	}
	return o.validateCommon()
}

func (o *AuthOptions) changed(name string) bool { return o.flags != nil && o.flags.Changed(name) }

// validateCommon checks the settings every mode shares: each group's,
// then what depends on two of them.
func (o *AuthOptions) validateCommon() error {
	for _, v := range []func() error{o.OIDCOptions.Validate, o.CacheOptions.Validate, o.ServerOptions.Validate} {
		if err := v(); err != nil {
			return err
		}
	}
	if o.GrantType == GrantIdentityPlatform {
		if err := o.IdentityPlatformOptions.Validate(); err != nil {
			return err
		}
		if o.ClientSecret == "" {
			return fmt.Errorf("--%s=%s needs the Google OAuth client's secret (Google requires it even for desktop clients): --%s or $%s", flagGrantType, GrantIdentityPlatform, flagClientSecretFile, EnvClientSecret)
		}
	}
	if o.Exchange != ExchangeCloudSigma && o.GrantType == GrantClientCredentials && o.ClientSecret == "" {
		return fmt.Errorf("--%s=%s needs a client secret: --%s or $%s", flagGrantType, GrantClientCredentials, flagClientSecretFile, EnvClientSecret)
	}
	return nil
}

// Validate checks the login's settings that stand alone (the issuer and
// client, which an exchange may supply, are checked by AuthOptions).
func (o *OIDCOptions) Validate() error {
	switch o.ClientAuthMethod {
	case "", "basic", "post":
	default:
		return fmt.Errorf("--%s %q is not one of basic, post", flagClientAuthMethod, o.ClientAuthMethod)
	}
	for _, a := range o.ListenAddresses {
		if err := validateListenAddress(a); err != nil {
			return err
		}
	}
	if o.RequestTimeout <= 0 {
		return fmt.Errorf("--%s must be positive", flagRequestTimeout)
	}
	if o.LoginCooldown < 0 {
		return fmt.Errorf("--%s must be 0 (no cooldown) or positive, got %s", flagLoginCooldown, o.LoginCooldown)
	}
	switch o.PKCEMethod {
	case PKCEAuto, PKCENo, PKCES256:
	default:
		return fmt.Errorf("--%s %q is not one of %s, %s, %s", flagPKCEMethod, o.PKCEMethod, PKCEAuto, PKCENo, PKCES256)
	}
	for k := range o.AuthRequestExtraParams {
		switch strings.ToLower(k) {
		case "client_id", "redirect_uri", "response_type", "response_mode", "scope", "state", "nonce", "code_challenge", "code_challenge_method", "request", "request_uri":
			return fmt.Errorf("--%s %s: that parameter is the login's own (its protections would be replaced)", flagExtraParams, k)
		}
	}
	for k := range o.RequestHeaders {
		switch strings.ToLower(k) {
		case "authorization", "host", "content-type", "content-length", "cookie":
			return fmt.Errorf("--%s %s: that header is the request's own", flagRequestHeader, k)
		}
	}
	if (o.LocalServerCert == "") != (o.LocalServerKey == "") {
		return fmt.Errorf("--%s and --%s go together", flagLocalCert, flagLocalKey)
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
			return fmt.Errorf("--%s %q: the browser login's redirect must be http(s)://localhost:PORT/... or http(s)://127.0.0.1:PORT/... (the loopback server binds 127.0.0.1)", flagRedirectURL, o.RedirectURL)
		}
		if (u.Scheme == "https") != (o.LocalServerCert != "") {
			return fmt.Errorf("--%s %q: https needs --%s and --%s, and they need an https redirect", flagRedirectURL, o.RedirectURL, flagLocalCert, flagLocalKey)
		}
	}
	if o.OpenURLAfterAuthentication != "" {
		u, err := url.Parse(o.OpenURLAfterAuthentication)
		if err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && IsLoopbackHost(u.Hostname()))) {
			return fmt.Errorf("--%s %q is not an https URL", flagOpenAfterAuth, o.OpenURLAfterAuthentication)
		}
	}
	if o.GrantType == GrantPassword && o.Username == "" {
		return fmt.Errorf("--%s=%s needs --%s", flagGrantType, GrantPassword, flagUsername)
	}
	if o.AuthTimeout <= 0 {
		return fmt.Errorf("--%s must be positive", flagAuthTimeout)
	}
	return nil
}

// Validate checks the storage.
func (o *CacheOptions) Validate() error {
	if !slices.Contains(tokencache.Storages, o.TokenCacheStorage) {
		return fmt.Errorf("--%s %q is not one of %s", flagStorage, o.TokenCacheStorage, strings.Join(tokencache.Storages, ", "))
	}
	return nil
}

// Complete puts the cache under ~/.kube/cache unless told otherwise.
func (o *CacheOptions) Complete() error {
	if o.TokenCacheDir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return fmt.Errorf("finding the home directory for the token cache: %w (set --%s)", err, flagCacheDir)
		}
		o.TokenCacheDir = filepath.Join(home, ".kube", "cache", "kubectl-impersonate")
	}
	o.TokenCacheDir = expandHome(o.TokenCacheDir)
	return nil
}

// Validate checks the sign-in's settings.
func (o *IdentityPlatformOptions) Validate() error {
	if o.IPAPIKey == "" {
		return fmt.Errorf("--%s=%s needs --%s (the project's Web API key)", flagGrantType, GrantIdentityPlatform, flagIPAPIKey)
	}
	if o.IPEmulator {
		for _, e := range []string{o.IPEndpoint, o.SecureTokenURL} {
			if u, err := url.Parse(e); err != nil || !IsLoopbackHost(u.Hostname()) {
				return fmt.Errorf("--identity-platform-emulator accepts unsigned tokens, so its endpoints must be on loopback: %q is not", e)
			}
		}
	}
	return nil
}

// Validate checks the allowed servers are URLs.
func (o *ServerOptions) Validate() error {
	for _, s := range o.AllowedServers {
		if u, err := url.Parse(s); err != nil || u.Host == "" {
			return fmt.Errorf("--%s %q is not a URL such as https://api.example.com:6443", flagAllowedServer, s)
		}
	}
	return nil
}

// CloudSigma is the CloudSigma impersonation these settings select.
func (o *AuthOptions) CloudSigma() CloudSigma {
	return CloudSigma{
		OAuthURL: o.CSOAuthURL, APIURLTemplate: o.CSAPIURL, Region: o.CSRegion, UserEmail: o.UserEmail,
		ClientID: o.ClientID, LegacyUsername: o.CSLegacyUsername,
	}
}

func validateListenAddress(a string) error {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Errorf("--%s %q is not host:port: %v", flagListen, a, err)
	}
	if !IsLoopbackHost(host) {
		return fmt.Errorf("--%s %q must be a loopback address (127.0.0.1, [::1] or localhost), so that no other machine can reach the login callback", flagListen, a)
	}
	if port == "" {
		return fmt.Errorf("--%s %q has no port (use :0 for any free port)", flagListen, a)
	}
	return nil
}

// Key is the cache key of the token these settings select, exchange included.
func (o *AuthOptions) Key() tokencache.Key {
	switch o.Exchange {
	case ExchangeCloudSigma:
		k := o.CloudSigma().Key()
		k.Extra = maps.Clone(k.Extra)
		if k.Extra == nil {
			k.Extra = map[string]string{}
		}
		maps.Copy(k.Extra, o.serverBindings())
		return k
	case ExchangeTokenExchange:
		k := o.BaseKey()
		k.UseAccessToken = true
		maps.Copy(k.Extra, o.TokenExchange().KeyExtra())
		return k
	}
	return o.BaseKey()
}

// TokenExchange is the RFC 8693 exchange these settings select.
func (o *AuthOptions) TokenExchange() TokenExchange {
	return TokenExchange{
		SubjectTokenType: o.ExchangeSubject, RequestedTokenType: o.ExchangeRequested,
		Audiences: o.ExchangeAudiences, Scopes: o.ExchangeScopes, RequestedSubject: o.ImpersonateUser,
	}
}

// BaseKey is the cache key of the login, before any exchange.
func (o *AuthOptions) BaseKey() tokencache.Key {
	k := tokencache.Key{
		Issuer:         o.IssuerURL,
		ClientID:       o.ClientID,
		Scopes:         Scopes(o.ExtraScopes),
		GrantType:      EffectiveGrant(o.GrantType),
		UseAccessToken: o.UseAccessToken,
	}
	k.Extra = o.serverBindings()
	maps.Copy(k.Extra, o.loginBindings())
	if k.GrantType == GrantIdentityPlatform {
		maps.Copy(k.Extra, map[string]string{"tenant": o.IPTenant, "toolkit": o.IPEndpoint, "securetoken": o.SecureTokenURL, "google": o.GoogleIssuer})
		if o.IPEmulator {
			k.Extra["emulator"] = "true"
		}
	}
	return k
}

// serverBindings bind a token to the servers it may go to: an exec entry
// that repeats a profile's provider, client and scopes without its
// allowedServers (or with another CA pin) reaches another cache entry,
// never the profile's.
func (o *AuthOptions) serverBindings() map[string]string {
	servers := make([]string, len(o.AllowedServers))
	for i, s := range o.AllowedServers {
		servers[i] = strings.ToLower(strings.TrimSuffix(s, "/"))
	}
	slices.Sort(servers)
	return map[string]string{"allowed_servers": strings.Join(slices.Compact(servers), " "), "allowed_server_ca": o.AllowedServerCA}
}

// loginBindings are the login settings besides the provider, client and
// scopes that change the token or whom it may be trusted from: the
// password grant's user, the authorization request's extra parameters
// (Auth0's audience, ADFS's resource), the request headers, and how the
// provider's TLS is verified (a token fetched without verification is
// never served to an entry that verifies).
func (o *AuthOptions) loginBindings() map[string]string {
	pairs := func(m map[string]string) string {
		out := make([]string, 0, len(m))
		for k, v := range m {
			out = append(out, strconv.Quote(k)+"="+strconv.Quote(v))
		}
		slices.Sort(out)
		return strings.Join(out, ",")
	}
	cas := make([]string, len(o.CertificateAuthorities))
	for i, c := range o.CertificateAuthorities {
		cas[i] = strconv.Quote(c)
	}
	m := map[string]string{"username": o.Username, "auth_params": pairs(o.AuthRequestExtraParams), "request_headers": pairs(o.RequestHeaders),
		"ca_files": strings.Join(cas, ","), "ca_data": strings.TrimSpace(o.CertificateAuthorityData)}
	if o.InsecureSkipTLSVerify {
		m["insecure_skip_tls_verify"] = "true"
	}
	return m
}

// NewStore opens the configured cache.
func (o *AuthOptions) NewStore(notify func(string)) (tokencache.Store, error) {
	return tokencache.New(tokencache.Options{Storage: o.TokenCacheStorage, Dir: o.TokenCacheDir, Notify: notify})
}

// Args are the flags that differ from their defaults, as --name=value, in
// a stable order, without secrets: the exec args setup writes and the login
// command that error messages suggest.
func (o *AuthOptions) Args() []string {
	var args []string
	if o.flags == nil {
		return nil
	}
	o.flags.VisitAll(func(f *pflag.Flag) {
		if !o.names[f.Name] || !f.Changed || slices.Contains(secretFlags, f.Name) {
			return
		}
		if m, ok := o.maps()[f.Name]; ok {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				args = append(args, "--"+f.Name+"="+k+"="+m[k])
			}
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				args = append(args, "--"+f.Name+"="+v)
			}
			return
		}
		if f.Value.String() == f.DefValue {
			return
		}
		args = append(args, "--"+f.Name+"="+f.Value.String())
	})
	return args
}

// HintArgs are Args for a hint shown on the terminal or in an error: the
// values of key=value flags (request headers are often API keys) are
// replaced by REDACTED.
func (o *AuthOptions) HintArgs() []string {
	args := o.Args()
	for i, a := range args {
		for name := range o.maps() {
			if rest, ok := strings.CutPrefix(a, "--"+name+"="); ok {
				k, _, _ := strings.Cut(rest, "=")
				args[i] = "--" + name + "=" + k + "=REDACTED"
			}
		}
	}
	return args
}

// maps are the key=value flags, which Args writes one pair per flag.
func (o *AuthOptions) maps() map[string]map[string]string {
	return map[string]map[string]string{flagExtraParams: o.AuthRequestExtraParams, flagRequestHeader: o.RequestHeaders}
}

// SecretOnCommandLine reports a secret given with --oidc-client-secret.
func (o *AuthOptions) SecretOnCommandLine() bool { return o.secretFromFlag }

func sameServer(a, b string) bool {
	return strings.EqualFold(strings.TrimSuffix(a, "/"), strings.TrimSuffix(b, "/"))
}

// CheckAllowedServer refuses to hand a token to a cluster the settings do
// not list, so that a token meant for one tenant's clusters cannot be sent
// to another's by a mistaken or hostile kubeconfig. c is spec.cluster of
// the ExecCredential request (nil when kubectl gave no cluster
// information). Besides the server URL, everything in the cluster entry
// that could hand the token to someone else is checked: proxy-url,
// insecure-skip-tls-verify, a tls-server-name other than the server's
// host, and, with --allowed-server-certificate-authority, the CA.
func (o *AuthOptions) CheckAllowedServer(c *execcred.Cluster) error {
	if len(o.AllowedServers) == 0 {
		return nil
	}
	if c == nil || c.Server == "" {
		return fmt.Errorf("--%s is set, but kubectl did not say which server the token is for: set provideClusterInfo: true in the kubeconfig exec entry (setup writes it)", flagAllowedServer)
	}
	server := strings.TrimSuffix(c.Server, "/")
	if !slices.ContainsFunc(o.AllowedServers, func(a string) bool { return sameServer(a, server) }) {
		return fmt.Errorf("refusing to hand a token to %s: it is not among the allowed servers (%s); add it with --%s if it is yours", server, strings.Join(o.AllowedServers, ", "), flagAllowedServer)
	}
	refuse := func(why string) error {
		return fmt.Errorf("refusing to hand a token to %s: its kubeconfig cluster %s; remove that from the cluster entry", server, why)
	}
	switch {
	case c.InsecureSkipTLSVerify:
		return refuse("skips TLS verification (insecure-skip-tls-verify), so anyone on the way could take the token")
	case c.ProxyURL != "":
		return refuse(fmt.Sprintf("sends it through the proxy %s (proxy-url)", c.ProxyURL))
	}
	if c.TLSServerName != "" {
		u, err := url.Parse(server)
		if err != nil || !strings.EqualFold(c.TLSServerName, u.Hostname()) {
			return refuse(fmt.Sprintf("accepts a certificate for %q (tls-server-name), not for the server's own name", c.TLSServerName))
		}
	}
	if o.AllowedServerCA != "" {
		pinned, err := os.ReadFile(o.AllowedServerCA)
		if err != nil {
			return fmt.Errorf("reading --%s: %w", flagAllowedServerCA, err)
		}
		if !samePEMCertificates(pinned, c.CertificateAuthorityData) {
			return refuse(fmt.Sprintf("trusts other certificate authorities than %s (--%s)", o.AllowedServerCA, flagAllowedServerCA))
		}
	}
	return nil
}

// samePEMCertificates compares the CERTIFICATE blocks of two PEM bundles
// byte for byte (no x509 parsing: this runs in the fast binary).
func samePEMCertificates(a, b []byte) bool {
	set := func(b []byte) []string {
		var out []string
		for {
			var blk *pem.Block
			blk, b = pem.Decode(b)
			if blk == nil {
				break
			}
			if blk.Type == "CERTIFICATE" {
				out = append(out, string(blk.Bytes))
			}
		}
		slices.Sort(out)
		return out
	}
	sa, sb := set(a), set(b)
	return len(sa) > 0 && slices.Equal(sa, sb)
}

// MinValidity is how long before its expiry the selected token is renewed
// (0: the default of pkg/credential).
func (o *AuthOptions) MinValidity() time.Duration {
	if o.Exchange == ExchangeCloudSigma {
		return CloudSigmaRenewBefore
	}
	return 0
}

// Source is the one recipe of the credential source kubectl's token comes
// from: its cache key (exchange and server bindings included), which token
// of the entry is handed out, the renewal margin and the lock directory.
// The fast binary reads the cache with it (auth nil: never called on a
// hit), the full binary's get-token obtains with it, and an exchange only
// supplies auth, so that both binaries always find the same entry.
func (o *AuthOptions) Source(store tokencache.Store, notify func(string), auth func() (credential.Authenticator, error)) *credential.Source {
	return &credential.Source{Key: o.Key(), Store: store, LockDir: o.TokenCacheDir, UseAccessToken: o.UsesAccessToken(),
		MinValidity: o.MinValidity(), NewAuthenticator: auth, Notify: notify, Cooldown: o.LoginCooldown}
}

// BaseSource is the login's own source, before any exchange: an exchange
// obtains its subject token from it.
func (o *AuthOptions) BaseSource(store tokencache.Store, notify func(string), auth func() (credential.Authenticator, error)) *credential.Source {
	return &credential.Source{Key: o.BaseKey(), Store: store, LockDir: o.TokenCacheDir, UseAccessToken: o.UseAccessToken,
		NewAuthenticator: auth, Notify: notify, Cooldown: o.LoginCooldown}
}

// UsesAccessToken tells whether the token handed out is the access token
// of the cached entry (exchanges always hand out access tokens).
func (o *AuthOptions) UsesAccessToken() bool {
	return o.UseAccessToken || o.Exchange != ExchangeNone
}

// readSecretFile is the one reader of a secret's file (--oidc-client-secret-file,
// --password-file): a regular file of at most 64 KiB, read without waiting on
// a FIFO, its trailing line ending dropped (the rest is the secret, spaces
// included); empty is an error, and a file others may read gets a warning.
func readSecretFile(flag, what, path string, warn func(string)) (string, error) {
	path = expandHome(path)
	b, fi, err := config.ReadRegular(what+" file", path, 64<<10, config.ReadOptions{})
	if err != nil {
		return "", fmt.Errorf("--%s: %w", flag, err)
	}
	secret := strings.TrimRight(string(b), "\r\n")
	if secret == "" {
		return "", fmt.Errorf("--%s %s is empty: write the %s into it", flag, path, what)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		warn(fmt.Sprintf("%s file %s is readable by others: chmod 600 %s", what, path, path))
	}
	return secret, nil
}
