package credspec

// EnvClientSecret holds the client secret, so it stays out of argv.
const EnvClientSecret = "KUBECTL_IMPERSONATE_CLIENT_SECRET"

// EnvPassword holds the password of --grant-type=password, so it stays out
// of argv.
const EnvPassword = "KUBECTL_IMPERSONATE_PASSWORD"

// Flag names of get-token, login, setup and logout: the settings'
// names on the command line, in profiles and in messages.
const (
	FlagProfile             = "profile"
	FlagIssuerURL           = "oidc-issuer-url"
	FlagClientID            = "oidc-client-id"
	FlagClientSecret        = "oidc-client-secret"
	FlagClientSecretFile    = "oidc-client-secret-file"
	FlagExtraScope          = "oidc-extra-scope"
	FlagUseAccessToken      = "oidc-use-access-token"
	FlagRedirectURL         = "oidc-redirect-url"
	FlagExtraParams         = "oidc-auth-request-extra-params"
	FlagRequestHeader       = "oidc-request-header"
	FlagPKCEMethod          = "oidc-pkce-method"
	FlagLocalCert           = "local-server-cert"
	FlagLocalKey            = "local-server-key"
	FlagOpenAfterAuth       = "open-url-after-authentication"
	FlagCAData              = "certificate-authority-data"
	FlagForceRefresh        = "force-refresh"
	FlagUsername            = "username"
	FlagPasswordFile        = "password-file"
	FlagGrantType           = "grant-type"
	FlagStorage             = "token-cache-storage"
	FlagCacheDir            = "token-cache-dir"
	FlagCA                  = "oidc-certificate-authority"
	FlagInsecure            = "insecure-skip-tls-verify"
	FlagListen              = "listen-address"
	FlagBrowserCommand      = "browser-command"
	FlagSkipOpenBrowser     = "skip-open-browser"
	FlagAuthTimeout         = "authentication-timeout"
	FlagRequestTimeout      = "idp-request-timeout"
	FlagLoginCooldown       = "login-cooldown"
	FlagExchange            = "exchange"
	FlagCSOAuthURL          = "cloudsigma-oauth-url"
	FlagCSRegion            = "cloudsigma-region"
	FlagCSAPIURL            = "cloudsigma-api-url"
	FlagCSLegacy            = "cloudsigma-enable-legacy-credentials"
	FlagUserEmail           = "impersonate-user-email"
	FlagExchangeAudience    = "exchange-audience"
	FlagExchangeFromCluster = "exchange-audience-from-cluster"
	FlagExchangeScope       = "exchange-scope"
	FlagExchangeRequested   = "exchange-requested-token-type"
	FlagExchangeSubjectType = "exchange-subject-token-type"
	FlagImpersonateUser     = "impersonate-user"
	FlagAuditLog            = "exchange-audit-log"
	FlagAllowedServer       = "allowed-server"
	FlagAllowedServerCA     = "allowed-server-certificate-authority"
	FlagClientAuthMethod    = "oidc-client-auth-method"
	FlagClientKeyFile       = "oidc-client-key-file"
	FlagClientCertFile      = "oidc-client-certificate-file"
	FlagClientKeyID         = "oidc-client-key-id"
	FlagClientAssertionFile = "oidc-client-assertion-file"
	FlagClientAssertionAud  = "oidc-client-assertion-audience"
	FlagIPAPIKey            = "identity-platform-api-key"
	FlagIPTenant            = "identity-platform-tenant"
	FlagIPEndpoint          = "identity-platform-endpoint"
	FlagSecureTokenEndpoint = "securetoken-endpoint"
	FlagGoogleIssuer        = "google-issuer-url"
	FlagIPEmulator          = "identity-platform-emulator"

	// Older names still accepted (settings binds them hidden):
	// kubelogin's --certificate-authority, get-token's --audit-log.
	FlagAliasCA       = "certificate-authority"
	FlagAliasAuditLog = "audit-log"
)

// Identity Platform endpoints.
const (
	DefaultIdentityToolkitURL = "https://identitytoolkit.googleapis.com"
	DefaultSecureTokenURL     = "https://securetoken.googleapis.com"
	DefaultGoogleIssuer       = "https://accounts.google.com"
)

// PKCE methods accepted by --oidc-pkce-method.
const (
	PKCEAuto = "auto"
	PKCENo   = "no"
	PKCES256 = "S256"
)

// ClientAuthMethods are --oidc-client-auth-method's values: how the client
// authenticates at the token endpoint: with its secret (client_secret_basic
// or client_secret_post), or with an assertion signed by its key
// (private_key_jwt, RFC 7523).
var ClientAuthMethods = []string{"basic", "post", AuthPrivateKeyJWT}

// AuthPrivateKeyJWT is --oidc-client-auth-method's private_key_jwt.
const AuthPrivateKeyJWT = "private-key-jwt"

// AssertionAudienceTokenEndpoint makes a signed assertion's aud the token
// endpoint's URL (Entra ID's choice) instead of the issuer.
const AssertionAudienceTokenEndpoint = "token-endpoint"

// Exchanges accepted by --exchange.
const (
	ExchangeNone          = ""
	ExchangeCloudSigma    = "cloudsigma"
	ExchangeTokenExchange = "token-exchange"
)

// Environment of the CloudSigma controller, honoured with --exchange=cloudsigma.
const (
	EnvCloudSigmaClientID     = "CLOUDSIGMA_CLIENT_ID"
	EnvCloudSigmaOAuthURL     = "CLOUDSIGMA_OAUTH_URL"
	EnvCloudSigmaRegion       = "CLOUDSIGMA_REGION"
	EnvCloudSigmaClientSecret = "CLOUDSIGMA_CLIENT_SECRET"
	EnvCloudSigmaLegacy       = "CLOUDSIGMA_ENABLE_LEGACY_CREDENTIALS"
	EnvCloudSigmaUsername     = "CLOUDSIGMA_USERNAME"
	EnvCloudSigmaPassword     = "CLOUDSIGMA_PASSWORD"
)
