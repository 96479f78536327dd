package settings

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/config"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/safefile"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/credspec"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
)

// profileAliases maps profile keys in the style of other tools' configs to
// flag names.
var profileAliases = map[string]string{"allowedServers": credspec.FlagAllowedServer,
	"allowed-servers":                   credspec.FlagAllowedServer,
	"allowedServerCertificateAuthority": credspec.FlagAllowedServerCA, credspec.FlagAliasCA: credspec.FlagCA,
	credspec.FlagAliasAuditLog: credspec.FlagAuditLog}

// profileFileKeys are the settings that name a file or directory.
var profileFileKeys = map[string]bool{credspec.FlagClientSecretFile: true, credspec.FlagPasswordFile: true,
	credspec.FlagCA: true, credspec.FlagLocalCert: true,
	credspec.FlagLocalKey: true, credspec.FlagAuditLog: true, credspec.FlagCacheDir: true,
	credspec.FlagAllowedServerCA: true,
	credspec.FlagClientKeyFile:   true, credspec.FlagClientCertFile: true, credspec.FlagClientAssertionFile: true}

// secretFlags never appear in a generated kubeconfig.
var secretFlags = []string{credspec.FlagClientSecret}

// AuthOptions bind what selects a token (credspec.Spec) to get-token's
// flags, shared by get-token, login, setup and logout and by the fast
// get-token binary (this package links no network code): the profile, the
// exec entry's lock (trust.go), the secrets read from files and the
// environment.
type AuthOptions struct {
	Profile string
	credspec.Spec

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
	// Environ is this process's environment (stubbable; nil:
	// environ.Environ).
	Environ func() []string
	// AccountHome is the account's home from the user database
	// (stubbable; nil: settings.AccountHome).
	AccountHome    func() string
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

// NewAuthOptions returns the defaults.
func NewAuthOptions() *AuthOptions { return &AuthOptions{Spec: credspec.NewSpec()} }

// AddFlags binds the options to fs: each group's flags.
func (o *AuthOptions) AddFlags(fs *pflag.FlagSet) {
	o.flags = fs
	fs.StringVar(&o.Profile, credspec.FlagProfile, o.Profile, "Read these settings from a profile of the profiles "+
		"file (see docs/profiles.md); flags override it")
	fs.StringVar(&o.Exchange, credspec.FlagExchange, o.Exchange, "Exchange the token for one that acts as another "+
		"user: cloudsigma or token-exchange (unset: no exchange)")
	fs.StringVar(&o.AuditLog, credspec.FlagAuditLog, o.AuditLog, "Append one JSON line per exchange step to this "+
		"file (never a token)")
	fs.BoolVar(&o.ForceRefresh, credspec.FlagForceRefresh, o.ForceRefresh, "Refresh the token (or log in) even when "+
		"the cached one is valid")
	addOIDCFlags(fs, &o.OIDC)
	addCacheFlags(fs, &o.Cache)
	addCloudSigmaFlags(fs, &o.CloudSigmaSettings)
	addTokenExchangeFlags(fs, &o.TokenExchangeSettings)
	addIdentityPlatformFlags(fs, &o.IdentityPlatform)
	addServerFlags(fs, &o.Servers)
	o.names = map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) { o.names[f.Name] = true })
	AliasFlag(fs, credspec.FlagAliasCA, credspec.FlagCA, nil)
	AliasFlag(fs, credspec.FlagAliasAuditLog, credspec.FlagAuditLog, nil)
}

// addOIDCFlags binds the login's flags.
func addOIDCFlags(fs *pflag.FlagSet, o *credspec.OIDC) {
	fs.StringVar(&o.IssuerURL, credspec.FlagIssuerURL, o.IssuerURL, "Issuer URL of the OIDC provider (required)")
	fs.StringVar(&o.ClientID, credspec.FlagClientID, o.ClientID, "OAuth client ID (required)")
	fs.StringVar(&o.ClientSecret, credspec.FlagClientSecret, o.ClientSecret, "OAuth client secret. Visible in the "+
		"process list: prefer --"+credspec.FlagClientSecretFile+" or $"+credspec.EnvClientSecret)
	fs.StringVar(&o.ClientSecretFile, credspec.FlagClientSecretFile, o.ClientSecretFile,
		"File holding the OAuth client secret")
	fs.StringVar(&o.ClientAuthMethod, credspec.FlagClientAuthMethod, o.ClientAuthMethod, "How a confidential client "+
		"authenticates at the token endpoint: basic (HTTP Basic) or post (in the form body) with its secret, or "+
		"private-key-jwt (an assertion signed with --"+credspec.FlagClientKeyFile+", RFC 7523; client-credentials, "+
		"password and the exchanges); default: post for CloudSigma, basic for token exchange, either for logins")
	fs.StringVar(&o.ClientKeyFile, credspec.FlagClientKeyFile, o.ClientKeyFile, "[private-key-jwt] PEM private key "+
		"(RSA or EC, readable by you alone) the client assertions are signed with")
	fs.StringVar(&o.ClientCertificateFile, credspec.FlagClientCertFile, o.ClientCertificateFile, "[private-key-jwt] "+
		"PEM certificate of the key: the assertion names it by x5t#S256 (Entra ID) instead of kid")
	fs.StringVar(&o.ClientKeyID, credspec.FlagClientKeyID, o.ClientKeyID, "[private-key-jwt] the assertion's kid: "+
		"the key ID the provider registered the key with (Okta, Auth0, Keycloak: the kid of the client's JWKS), or "+
		"none; default: the key's RFC 7638 thumbprint, or none with --"+credspec.FlagClientCertFile)
	fs.StringVar(&o.ClientAssertionAudience, credspec.FlagClientAssertionAud, o.ClientAssertionAudience,
		"[private-key-jwt] the assertion's aud: the issuer (default), "+credspec.AssertionAudienceTokenEndpoint+
			" (the token endpoint's URL, Entra ID's), or a URL")
	fs.StringVar(&o.ClientAssertionFile, credspec.FlagClientAssertionFile, o.ClientAssertionFile, "File holding a "+
		"client assertion issued to the client (a projected service account token, a CI job's token), read at every "+
		"request to the token endpoint: a federated credential (RFC 7523), instead of a secret")
	fs.StringSliceVar(&o.ExtraScopes, credspec.FlagExtraScope, o.ExtraScopes, "Scope to request besides openid "+
		"(repeatable, or comma-separated)")
	fs.StringVar(&o.GrantType, credspec.FlagGrantType, o.GrantType,
		"Grant: "+strings.Join(credspec.GrantTypes,
			"|")+" (auto: authcode for people; device-code where no browser can be shown, over SSH or without a "+
			"display, if the provider offers "+
			"it)")
	fs.BoolVar(&o.UseAccessToken, credspec.FlagUseAccessToken, o.UseAccessToken, "Give kubectl the access token "+
		"instead of the ID token")
	fs.StringVar(&o.RedirectURL, credspec.FlagRedirectURL, o.RedirectURL, "[authcode] the loopback redirect URL the "+
		"provider has registered, e.g. http://localhost:8000/ (default: a free port); [authcode-keyboard] the "+
		"redirect URL (default "+credspec.OOBRedirectURL+")")
	fs.StringToStringVar(&o.AuthRequestExtraParams, credspec.FlagExtraParams, o.AuthRequestExtraParams,
		"[authcode, authcode-keyboard] extra parameter of the authorization request, key=value (Auth0 audience, "+
			"Entra prompt, ADFS resource); repeatable")
	fs.StringToStringVar(&o.RequestHeaders, credspec.FlagRequestHeader, o.RequestHeaders, "HTTP header sent with "+
		"every request to the issuer's host (never to another host), key=value; repeatable; the value is written "+
		"into the kubeconfig's args by setup")
	fs.StringVar(&o.PKCEMethod, credspec.FlagPKCEMethod, o.PKCEMethod, "[authcode, authcode-keyboard] PKCE: auto "+
		"(S256 unless the discovery document lists other methods only), no, or S256")
	fs.StringVar(&o.LocalServerCert, credspec.FlagLocalCert, o.LocalServerCert, "[authcode] certificate (PEM) to "+
		"serve the loopback redirect over https")
	fs.StringVar(&o.LocalServerKey, credspec.FlagLocalKey, o.LocalServerKey,
		"[authcode] key (PEM) of --"+credspec.FlagLocalCert)
	fs.StringVar(&o.OpenURLAfterAuthentication, credspec.FlagOpenAfterAuth, o.OpenURLAfterAuthentication,
		"[authcode] send the browser to this https URL after the login (successful or not: the terminal says which)")
	fs.StringVar(&o.CertificateAuthorityData, credspec.FlagCAData, o.CertificateAuthorityData, "Base64 PEM of CAs "+
		"for the identity provider, added to the system roots")
	fs.StringVar(&o.Username, credspec.FlagUsername, o.Username, "[password] the username; the password comes from a "+
		"prompt, --"+credspec.FlagPasswordFile+" or $"+credspec.EnvPassword+", never the command line")
	fs.StringVar(&o.PasswordFile, credspec.FlagPasswordFile, o.PasswordFile, "[password] file holding the password")
	fs.StringArrayVar(&o.CertificateAuthorities, credspec.FlagCA, o.CertificateAuthorities, "PEM file of CAs for the "+
		"identity provider, added to the system roots; repeatable (also --"+credspec.FlagAliasCA+", kubelogin's name)")
	fs.BoolVar(&o.InsecureSkipTLSVerify, credspec.FlagInsecure, o.InsecureSkipTLSVerify, "Do not verify the identity "+
		"provider's TLS certificate (insecure)")
	fs.StringSliceVar(&o.ListenAddresses, credspec.FlagListen, o.ListenAddresses, "[authcode] loopback address of "+
		"the local server for the browser login, tried in order (default "+strings.Join(credspec.DefaultListenAddresses,
		",")+")")
	fs.StringVar(&o.BrowserCommand, credspec.FlagBrowserCommand, o.BrowserCommand, "[authcode, device-code] command "+
		"that opens the login URL (default: the system's)")
	fs.BoolVar(&o.SkipOpenBrowser, credspec.FlagSkipOpenBrowser, o.SkipOpenBrowser, "[authcode, device-code] print "+
		"the login URL without opening a browser")
	fs.DurationVar(&o.AuthTimeout, credspec.FlagAuthTimeout, o.AuthTimeout, "[authcode, authcode-keyboard, "+
		"device-code] how long to wait for the login in the browser or on the device page")
	fs.DurationVar(&o.RequestTimeout, credspec.FlagRequestTimeout, o.RequestTimeout, "How long to wait for each "+
		"answer of the identity provider (and the exchange's endpoints)")
	fs.DurationVar(&o.LoginCooldown, credspec.FlagLoginCooldown, o.LoginCooldown, "[authcode, authcode-keyboard, "+
		"device-code] after a login that failed or was abandoned, how long further calls for the same identity fail "+
		"at once instead of opening another (0: no cooldown; login itself ignores it)")
}

// addCacheFlags binds the cache's flags.
func addCacheFlags(fs *pflag.FlagSet, o *credspec.Cache) {
	fs.StringVar(&o.TokenCacheStorage, credspec.FlagStorage, o.TokenCacheStorage,
		"Where tokens are cached: "+strings.Join(tokencache.Storages, "|")+" (auto: the OS keyring, else disk)")
	fs.StringVar(&o.TokenCacheDir, credspec.FlagCacheDir, o.TokenCacheDir, "Directory of the disk cache and the lock "+
		"files (default ~/.kube/cache/kubectl-impersonate)")
}

// addCloudSigmaFlags binds CloudSigma's flags.
func addCloudSigmaFlags(fs *pflag.FlagSet, o *credspec.CloudSigmaSettings) {
	fs.StringVar(&o.CSOAuthURL, credspec.FlagCSOAuthURL, o.CSOAuthURL, "CloudSigma's Keycloak (realm cloudsigma); "+
		"unset: $"+credspec.EnvCloudSigmaOAuthURL+", else the default")
	fs.StringVar(&o.CSRegion, credspec.FlagCSRegion, o.CSRegion, "CloudSigma region (location) of the user, e.g. "+
		"zrh; unset: $"+credspec.EnvCloudSigmaRegion)
	fs.StringVar(&o.CSAPIURL, credspec.FlagCSAPIURL, o.CSAPIURL, "CloudSigma API URL template; {region} is replaced")
	fs.BoolVar(&o.CSLegacy, credspec.FlagCSLegacy, o.CSLegacy,
		"Allow legacy $"+credspec.EnvCloudSigmaUsername+"/$"+credspec.EnvCloudSigmaPassword+
			" for the service identity (or $"+credspec.EnvCloudSigmaLegacy+"=true)")
	fs.StringVar(&o.UserEmail, credspec.FlagUserEmail, o.UserEmail, "With --exchange=cloudsigma: the email of the "+
		"user to act as")
}

// addTokenExchangeFlags binds token exchange's flags.
func addTokenExchangeFlags(fs *pflag.FlagSet, o *credspec.TokenExchangeSettings) {
	fs.StringSliceVar(&o.ExchangeAudiences, credspec.FlagExchangeAudience, o.ExchangeAudiences,
		"With --exchange=token-exchange: audience to request (repeatable)")
	fs.BoolVar(&o.ExchangeFromCluster, credspec.FlagExchangeFromCluster, o.ExchangeFromCluster,
		"With --exchange=token-exchange: the audience is the one the cluster's kubeconfig extension "+
			credspec.ExecExtensionName+" names (audience: NAME; needs "+
			"provideClusterInfo: true); a cluster without one gets the login's token (setup --cluster-audience writes "+
			"them)")
	fs.StringSliceVar(&o.ExchangeScopes, credspec.FlagExchangeScope, o.ExchangeScopes,
		"With --exchange=token-exchange: scope to request (repeatable)")
	fs.StringVar(&o.ExchangeRequested, credspec.FlagExchangeRequested, o.ExchangeRequested,
		"With --exchange=token-exchange: requested_token_type (access_token, id_token, refresh_token or a URN)")
	fs.StringVar(&o.ExchangeSubject, credspec.FlagExchangeSubjectType, o.ExchangeSubject,
		"With --exchange=token-exchange: which token of the login to exchange (access_token or id_token)")
	fs.StringVar(&o.ImpersonateUser, credspec.FlagImpersonateUser, o.ImpersonateUser,
		"With --exchange=token-exchange: the user to act as (Keycloak V1 requested_subject)")
}

// addIdentityPlatformFlags binds Identity Platform's flags.
func addIdentityPlatformFlags(fs *pflag.FlagSet, o *credspec.IdentityPlatform) {
	fs.StringVar(&o.IPAPIKey, credspec.FlagIPAPIKey, o.IPAPIKey, "With --grant-type=identity-platform: the project's "+
		"Web API key")
	fs.StringVar(&o.IPTenant, credspec.FlagIPTenant, o.IPTenant, "With --grant-type=identity-platform: the Identity "+
		"Platform tenant, if any")
	fs.StringVar(&o.IPEndpoint, credspec.FlagIPEndpoint, o.IPEndpoint, "Identity Toolkit API endpoint (tests, "+
		"emulators)")
	fs.StringVar(&o.SecureTokenURL, credspec.FlagSecureTokenEndpoint, o.SecureTokenURL, "Secure Token API endpoint "+
		"(tests, emulators)")
	fs.BoolVar(&o.IPEmulator, credspec.FlagIPEmulator, o.IPEmulator, "Accept the Firebase Auth emulator's unsigned "+
		"tokens (its endpoints must be on loopback)")
	fs.StringVar(&o.GoogleIssuer, credspec.FlagGoogleIssuer, o.GoogleIssuer, "With --grant-type=identity-platform: "+
		"the issuer of the Google sign-in")
}

// addServerFlags binds the allowed servers' flags.
func addServerFlags(fs *pflag.FlagSet, o *credspec.Servers) {
	fs.StringSliceVar(&o.AllowedServers, credspec.FlagAllowedServer, o.AllowedServers, "Hand tokens only to these "+
		"API servers (needs provideClusterInfo: true); repeatable; on the command line it may only narrow a "+
		"profile's allowedServers")
	fs.StringVar(&o.AllowedServerCA, credspec.FlagAllowedServerCA, o.AllowedServerCA, "With --allowed-server: the "+
		"kubeconfig cluster must name exactly these CA certificates (PEM file; profile key "+
		"allowedServerCertificateAuthority)")
}

// Complete applies the profile, reads the client secret and fills defaults.
func (o *AuthOptions) Complete(getenv func(string) string, warn func(string)) error {
	if o.changed(credspec.FlagAllowedServer) && (len(o.AllowedServers) == 0 || slices.Contains(o.AllowedServers, "")) {
		return fmt.Errorf("--%s needs a server URL such as https://api.example.com:6443: an empty value would lift "+
			"the limit", credspec.FlagAllowedServer)
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
	o.secretFromFlag = o.flags != nil && o.flags.Changed(credspec.FlagClientSecret)
	if o.secretFromFlag {
		warn("--" + credspec.FlagClientSecret + " is visible to other users in the process list: use --" +
			credspec.FlagClientSecretFile + " or $" + credspec.EnvClientSecret)
	}
	if o.ClientSecretFile != "" {
		if o.ClientSecret != "" {
			return fmt.Errorf("give the client secret once: --%s or --%s, not both", credspec.FlagClientSecret,
				credspec.FlagClientSecretFile)
		}
		var err error
		o.ClientSecret, err = readSecretFile(
			getenv, credspec.FlagClientSecretFile, "client secret", o.ClientSecretFile, warn)
		if err != nil {
			return err
		}
		// As before: a client secret is a token, never padded (a password
		// may begin or end with a space, and keeps it).
		if o.ClientSecret = strings.TrimSpace(o.ClientSecret); o.ClientSecret == "" {
			return fmt.Errorf("--%s %s holds only white space: write the client secret into it",
				credspec.FlagClientSecretFile, o.ClientSecretFile)
		}
	}
	if o.ClientSecret == "" {
		o.ClientSecret = getenv(credspec.EnvClientSecret)
	}
	if o.PasswordFile != "" {
		var err error
		o.Password, err = readSecretFile(getenv, credspec.FlagPasswordFile, "password", o.PasswordFile, warn)
		if err != nil {
			return err
		}
	}
	if o.Password == "" {
		o.Password = getenv(credspec.EnvPassword)
	}
	if o.Exchange == credspec.ExchangeCloudSigma {
		o.cloudSigmaFromEnv(getenv)
	}
	o.AuditLog = credspec.ExpandHome(getenv, o.AuditLog)
	o.AllowedServerCA = credspec.ExpandHome(getenv, o.AllowedServerCA)
	for i, ca := range o.CertificateAuthorities {
		o.CertificateAuthorities[i] = credspec.ExpandHome(getenv, ca)
	}
	o.PasswordFile = credspec.ExpandHome(getenv, o.PasswordFile)
	for _, f := range []*string{&o.ClientKeyFile, &o.ClientCertificateFile, &o.ClientAssertionFile, &o.LocalServerCert,
		&o.LocalServerKey} {
		*f = credspec.ExpandHome(getenv, *f)
	}
	return o.Cache.Complete(getenv)
}

// cloudSigmaFromEnv completes CloudSigma's exchange from the deployment's
// own variables ($CLOUDSIGMA_*): flags and profiles win.
func (o *AuthOptions) cloudSigmaFromEnv(getenv func(string) string) {
	if o.ClientID == "" {
		o.ClientID = getenv(credspec.EnvCloudSigmaClientID)
	}
	// The deployment's own variables; flags and profiles win.
	if v := getenv(credspec.EnvCloudSigmaOAuthURL); v != "" && o.CSOAuthURL == credspec.DefaultCloudSigmaOAuthURL &&
		!o.changed(credspec.FlagCSOAuthURL) {
		o.CSOAuthURL = v
	}
	if v := getenv(credspec.EnvCloudSigmaRegion); v != "" && o.CSRegion == "" {
		o.CSRegion = v
	}
	if o.ClientSecret == "" {
		o.ClientSecret = getenv(credspec.EnvCloudSigmaClientSecret)
	}
	if getenv(credspec.EnvCloudSigmaLegacy) == "true" {
		o.CSLegacy = true
	}
	user, pass := getenv(credspec.EnvCloudSigmaUsername), getenv(credspec.EnvCloudSigmaPassword)
	if user != "" && o.ClientSecret == "" {
		if o.CSLegacy {
			o.CSLegacyUsername, o.CSLegacyPassword = user, pass
		} else {
			o.LegacyWithoutOptIn = true
		}
	}
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
	for _, raw := range slices.Sorted(maps.Keys(settings)) {
		key := raw
		if alias, ok := profileAliases[raw]; ok {
			key = alias
		}
		f := o.flags.Lookup(key)
		if f == nil || !o.names[key] || key == credspec.FlagProfile {
			return fmt.Errorf("profile %q in %s: unknown key %q (keys are the long flag names of get-token)", o.Profile,
				path, key)
		}
		if slices.Contains(secretFlags, key) {
			if err := safefile.Secret.Check("profiles file", path, file.Access, false); err != nil {
				return fmt.Errorf("profile %q holds a client secret but %w", o.Profile, err)
			}
		}
		values, err := config.Values(settings[raw])
		if err != nil {
			return fmt.Errorf("profile %q in %s: key %q: %w", o.Profile, path, key, err)
		}
		if o.profileKeys == nil {
			o.profileKeys = map[string]bool{}
		}
		o.profileKeys[key] = true
		if key == credspec.FlagAllowedServer {
			if len(values) == 0 || slices.Contains(values, "") {
				return fmt.Errorf("profile %q in %s: allowedServers needs server URLs such as "+
					"https://api.example.com:6443: an empty one would lift the limit", o.Profile, path)
			}
			o.profileServers = values
		}
		// A relative path would be read from kubectl's working directory,
		// wherever that is (a cloned repository of someone else's).
		if profileFileKeys[key] {
			for _, v := range values {
				if !filepath.IsAbs(v) && !strings.HasPrefix(v, "~/") {
					return fmt.Errorf("profile %q in %s: key %q: %q is a relative path: give an absolute one (or "+
						"~/...)", o.Profile, path, raw, v)
				}
			}
		}
		if f.Changed {
			if err := o.checkNarrowed(getenv, key, values); err != nil {
				return err
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

// checkNarrowed checks a flag the command line set that profile key also
// sets: the profile's allowed servers are a limit the command line (which
// a kubeconfig's exec entry writes) may only narrow, and its server CA may
// not be replaced; the rest the command line overrides.
func (o *AuthOptions) checkNarrowed(getenv func(string) string, key string, values []string) error {
	if key == credspec.FlagAllowedServer {
		for _, s := range o.AllowedServers {
			if !slices.ContainsFunc(values, func(v string) bool { return credspec.SameServer(v, s) }) {
				return fmt.Errorf("--%s %q is not among the allowedServers of profile %q (%s): on the "+
					"command line it may only narrow them", credspec.FlagAllowedServer, s, o.Profile,
					strings.Join(values, ", "))
			}
		}
	}
	if key == credspec.FlagAllowedServerCA && o.AllowedServerCA != credspec.ExpandHome(getenv, values[0]) &&
		o.AllowedServerCA != values[0] {
		return fmt.Errorf("--%s differs from profile %q's: the command line may not replace it",
			credspec.FlagAllowedServerCA, o.Profile)
	}
	return nil
}

// Validate checks the settings without side effects: flags given without
// effect, then the values (credspec.Spec.Validate).
func (o *AuthOptions) Validate() error {
	if o.Exchange != credspec.ExchangeTokenExchange {
		for _, f := range []string{credspec.FlagExchangeAudience, credspec.FlagExchangeFromCluster,
			credspec.FlagExchangeScope, credspec.FlagExchangeRequested, credspec.FlagImpersonateUser} {
			if o.changed(f) {
				return fmt.Errorf("--%s takes effect with --%s=%s only", f, credspec.FlagExchange,
					credspec.ExchangeTokenExchange)
			}
		}
	}
	return o.Spec.Validate()
}

func (o *AuthOptions) changed(name string) bool { return o.flags != nil && o.flags.Changed(name) }

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
	return map[string]map[string]string{credspec.FlagExtraParams: o.AuthRequestExtraParams,
		credspec.FlagRequestHeader: o.RequestHeaders}
}

// SecretOnCommandLine reports a secret given with --oidc-client-secret.
func (o *AuthOptions) SecretOnCommandLine() bool { return o.secretFromFlag }

// readSecretFile is the one reader of a secret's file (--oidc-client-secret-file,
// --password-file): a regular file of at most 64 KiB, read without waiting on
// a FIFO, its trailing line ending dropped (the rest is the secret, spaces
// included); empty is an error, and a file others may read gets a warning.
func readSecretFile(getenv func(string) string, flag, what, path string, warn func(string)) (string, error) {
	path = credspec.ExpandHome(getenv, path)
	b, access, err := safefile.ReadRegular(what+" file", path, 64<<10, safefile.ReadOptions{})
	if err != nil {
		return "", fmt.Errorf("--%s: %w", flag, err)
	}
	secret := strings.TrimRight(string(b), "\r\n")
	if secret == "" {
		return "", fmt.Errorf("--%s %s is empty: write the %s into it", flag, path, what)
	}
	if err := safefile.Secret.Check(what+" file", path, access, false); err != nil {
		warn(err.Error())
	}
	return secret, nil
}
