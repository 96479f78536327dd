package settings

import "github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/credspec"

// FlagGroup is a section of get-token's flags in --help: kubelogin marks
// its flags by grant ([authcode], [password]); these sections go further
// and list them together. A static table: the get-token path never reads it.
type FlagGroup struct {
	Title string
	Flags []string
}

// FlagGroups are the sections, in the order --help shows them.
var FlagGroups = []FlagGroup{
	{"Provider (every grant)",
		[]string{credspec.FlagIssuerURL, credspec.FlagClientID, credspec.FlagClientSecretFile,
			credspec.FlagClientSecret, credspec.FlagClientAuthMethod,
			credspec.FlagExtraScope, credspec.FlagGrantType, credspec.FlagUseAccessToken, credspec.FlagProfile,
			credspec.FlagCA, credspec.FlagCAData, credspec.FlagInsecure, credspec.FlagRequestHeader,
			credspec.FlagRequestTimeout, credspec.FlagForceRefresh}},
	{"Browser login [authcode, authcode-keyboard, device-code]",
		[]string{credspec.FlagListen, credspec.FlagBrowserCommand, credspec.FlagSkipOpenBrowser,
			credspec.FlagAuthTimeout,
			credspec.FlagRedirectURL, credspec.FlagPKCEMethod, credspec.FlagExtraParams, credspec.FlagLocalCert,
			credspec.FlagLocalKey, credspec.FlagOpenAfterAuth}},
	{"Password grant [password]", []string{credspec.FlagUsername, credspec.FlagPasswordFile}},
	{"Google Cloud Identity Platform [identity-platform]",
		[]string{credspec.FlagIPAPIKey, credspec.FlagIPTenant, credspec.FlagGoogleIssuer, credspec.FlagIPEndpoint,
			credspec.FlagSecureTokenEndpoint, credspec.FlagIPEmulator}},
	{"Impersonation exchange [--exchange]",
		[]string{credspec.FlagExchange, credspec.FlagUserEmail, credspec.FlagCSRegion, credspec.FlagCSOAuthURL,
			credspec.FlagCSAPIURL, credspec.FlagCSLegacy,
			credspec.FlagImpersonateUser, credspec.FlagExchangeAudience, credspec.FlagExchangeScope,
			credspec.FlagExchangeRequested, credspec.FlagExchangeSubjectType, credspec.FlagAuditLog}},
	{"Token cache and allowed servers",
		[]string{credspec.FlagStorage, credspec.FlagCacheDir, credspec.FlagAllowedServer,
			credspec.FlagAllowedServerCA}},
}
