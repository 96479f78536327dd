package settings

// FlagGroup is a section of get-token's flags in --help: kubelogin marks
// its flags by grant ([authcode], [password]); these sections go further
// and list them together. A static table: the get-token path never reads it.
type FlagGroup struct {
	Title string
	Flags []string
}

// FlagGroups are the sections, in the order --help shows them.
var FlagGroups = []FlagGroup{
	{"Provider (every grant)", []string{flagIssuerURL, flagClientID, flagClientSecretFile, flagClientSecret, flagClientAuthMethod,
		flagExtraScope, flagGrantType, flagUseAccessToken, flagProfile, flagCA, flagCAData, flagInsecure, flagRequestHeader,
		flagRequestTimeout, flagForceRefresh}},
	{"Browser login [authcode, authcode-keyboard, device-code]", []string{flagListen, flagBrowserCommand, flagSkipOpenBrowser, flagAuthTimeout,
		flagRedirectURL, flagPKCEMethod, flagExtraParams, flagLocalCert, flagLocalKey, flagOpenAfterAuth}},
	{"Password grant [password]", []string{flagUsername, flagPasswordFile}},
	{"Google Cloud Identity Platform [identity-platform]", []string{flagIPAPIKey, flagIPTenant, flagGoogleIssuer, flagIPEndpoint,
		flagSecureTokenEndpoint, flagIPEmulator}},
	{"Impersonation exchange [--exchange]", []string{flagExchange, flagUserEmail, flagCSRegion, flagCSOAuthURL, flagCSAPIURL, flagCSLegacy,
		flagImpersonateUser, flagExchangeAudience, flagExchangeScope, flagExchangeRequested, flagExchangeSubjectType, flagAuditLog}},
	{"Token cache and allowed servers", []string{flagStorage, flagCacheDir, flagAllowedServer, flagAllowedServerCA}},
}
