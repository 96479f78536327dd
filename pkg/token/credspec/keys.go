package credspec

import (
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
)

// Grant types accepted by --grant-type.
const (
	GrantAuto              = "auto"
	GrantAuthCode          = "authcode"
	GrantAuthCodeKeyboard  = "authcode-keyboard"
	GrantDeviceCode        = "device-code"
	GrantClientCredentials = "client-credentials"
	// GrantIdentityPlatform: Google sign-in, then Google Cloud Identity
	// Platform's signInWithIdp (issuer securetoken.google.com/PROJECT).
	GrantIdentityPlatform = "identity-platform"
	// GrantPassword: the resource owner password grant (RFC 6749 §4.3),
	// for providers and CI systems that still use it.
	GrantPassword = "password"
)

// GrantTypes lists the accepted grant types.
var GrantTypes = []string{GrantAuto, GrantAuthCode, GrantAuthCodeKeyboard, GrantDeviceCode, GrantClientCredentials,
	GrantIdentityPlatform, GrantPassword}

// Defaults.
const (
	DefaultAuthTimeout = 3 * time.Minute
	// OOBRedirectURL is the out-of-band redirect of authcode-keyboard.
	OOBRedirectURL            = "urn:ietf:wg:oauth:2.0:oob"
	DefaultCloudSigmaOAuthURL = "https://oauth.cloudsigma.com"
	DefaultCloudSigmaAPIURL   = "https://direct.{region}.cloudsigma.com"
	cloudSigmaRealm           = "cloudsigma"
	// CloudSigmaRenewBefore: every token of the CloudSigma flow is renewed
	// this long before it expires.
	CloudSigmaRenewBefore = 5 * time.Minute
	// ServiceProviderAudience is the resource server of CloudSigma's UMA step.
	ServiceProviderAudience = "service_provider_api"
)

// DefaultListenAddresses are tried in order for the loopback server. Most
// providers need the redirect URIs registered; these are kubelogin's, so
// existing client registrations work.
var DefaultListenAddresses = []string{"127.0.0.1:8000", "127.0.0.1:18000"}

// Scopes are "openid" plus the extra scopes, sorted, without repeats.
func Scopes(extra []string) []string {
	scopes := append([]string{"openid"}, extra...)
	slices.Sort(scopes)
	return slices.Compact(scopes)
}

// EffectiveGrant resolves "auto".
func EffectiveGrant(grant string) string {
	if grant == "" || grant == GrantAuto {
		return GrantAuthCode
	}
	return grant
}

// CloudSigma identifies one impersonation: who acts as whom, where.
type CloudSigma struct {
	OAuthURL       string
	APIURLTemplate string
	Region         string
	UserEmail      string
	ClientID       string
	LegacyUsername string
}

// Issuer is the Keycloak realm.
func (c CloudSigma) Issuer() string {
	return strings.TrimSuffix(c.OAuthURL, "/") + "/realms/" + cloudSigmaRealm
}

// APIURL is the API base of the region.
func (c CloudSigma) APIURL() string {
	t := c.APIURLTemplate
	if t == "" {
		t = DefaultCloudSigmaAPIURL
	}
	return strings.TrimSuffix(strings.ReplaceAll(t, "{region}", c.Region), "/")
}

// ServiceKey is the cache key of the service token, shared by every user
// and region.
func (c CloudSigma) ServiceKey() tokencache.Key {
	k := tokencache.Key{Issuer: c.Issuer(), ClientID: c.ClientID, GrantType: "client-credentials", UseAccessToken: true}
	if c.LegacyUsername != "" {
		k.GrantType, k.Extra = "password", map[string]string{"username": c.LegacyUsername}
	}
	return k
}

// RPTKey is the cache key of the RPT, shared like the service token.
func (c CloudSigma) RPTKey() tokencache.Key {
	k := c.ServiceKey()
	k.GrantType = "uma-ticket"
	k.Extra = map[string]string{"audience": ServiceProviderAudience, "service_grant": c.ServiceKey().GrantType,
		"username": c.LegacyUsername}
	return k
}

// Key is the cache key of the impersonated token: per user and region.
// With legacy credentials the token is the legacy account's own (no
// impersonation), so the key is the service token's.
func (c CloudSigma) Key() tokencache.Key {
	if c.LegacyUsername != "" {
		return c.ServiceKey()
	}
	k := c.ServiceKey()
	k.GrantType = "cloudsigma-impersonate"
	k.Extra = map[string]string{"region": c.Region, "user_email": strings.ToLower(c.UserEmail), "api_url": c.APIURL(),
		"username": c.LegacyUsername}
	return k
}

// Validate checks the settings without any network call; clientSecret is
// only checked for presence.
func (c CloudSigma) Validate(clientSecret string) error {
	// With legacy credentials the token is the legacy account's own: no
	// user to impersonate.
	if c.LegacyUsername == "" {
		if strings.TrimSpace(c.UserEmail) == "" {
			return ErrNoUserEmail
		}
		if !strings.Contains(c.UserEmail, "@") {
			return fmt.Errorf("--impersonate-user-email %q is not an email address", c.UserEmail)
		}
	}
	if c.Region == "" {
		return fmt.Errorf("--cloudsigma-region (or $CLOUDSIGMA_REGION) is required with --exchange=cloudsigma (e.g. " +
			"zrh, sjc, mnl)")
	}
	if !isRegion(c.Region) {
		return fmt.Errorf("--cloudsigma-region %q is not a region name (lowercase letters, digits and -, at most "+
			"32): it goes into the API host name", c.Region)
	}
	if err := c.checkAPIHost(); err != nil {
		return err
	}
	if c.ClientID == "" {
		return fmt.Errorf("a CloudSigma client ID is required: --oidc-client-id or $CLOUDSIGMA_CLIENT_ID")
	}
	if clientSecret == "" && c.LegacyUsername == "" {
		return fmt.Errorf("a CloudSigma client secret is required (--oidc-client-secret-file, "+
			"$KUBECTL_IMPERSONATE_CLIENT_SECRET or $CLOUDSIGMA_CLIENT_SECRET), or a client assertion (--%s=%s, --%s)",
			FlagClientAuthMethod, AuthPrivateKeyJWT, FlagClientAssertionFile)
	}
	for name, raw := range map[string]string{"--cloudsigma-oauth-url": c.OAuthURL, "--cloudsigma-api-url": c.APIURL()} {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" ||
			(u.Scheme != "https" && !(u.Scheme == "http" && IsLoopbackHost(u.Hostname()))) {
			return fmt.Errorf("%s %q must be an https URL", name, raw)
		}
	}
	return nil
}

// isRegion tells whether s is a CloudSigma region as the API host takes
// it: 1 to 32 of a-z, 0-9 and "-" (written out: as a regular expression it
// cost every start 26 KB to compile).
func isRegion(s string) bool {
	if len(s) == 0 || len(s) > 32 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// checkAPIHost makes sure the region only filled in the template's host:
// the RPT and the service token go to that host.
func (c CloudSigma) checkAPIHost() error {
	t := c.APIURLTemplate
	if t == "" {
		t = DefaultCloudSigmaAPIURL
	}
	const mark = "cloudsigmaregionmark"
	tu, err1 := url.Parse(strings.ReplaceAll(t, "{region}", mark))
	u, err2 := url.Parse(c.APIURL())
	if err1 != nil || err2 != nil || u.Host != strings.ReplaceAll(tu.Host, mark, c.Region) {
		return fmt.Errorf("the CloudSigma API URL %q for region %q is not the template's host %q", c.APIURL(), c.Region,
			t)
	}
	return nil
}

// ErrNoUserEmail is returned before any network call.
var ErrNoUserEmail = fmt.Errorf("--impersonate-user-email is required with --exchange=cloudsigma: the email of the " +
	"user to act as")

// TokenTypePrefix is RFC 8693's token type URN prefix.
const TokenTypePrefix = "urn:ietf:params:oauth:token-type:"

// TokenType expands a short token type name (access_token, id_token,
// refresh_token, jwt) to its RFC 8693 URN; a URN is kept.
func TokenType(name string) string {
	if name == "" || strings.HasPrefix(name, "urn:") {
		return name
	}
	return TokenTypePrefix + name
}

// TokenExchange are the RFC 8693 settings that change the exchanged token.
type TokenExchange struct {
	SubjectTokenType   string
	RequestedTokenType string
	Audiences          []string
	Scopes             []string
	RequestedSubject   string
}

// KeyExtra are the settings the cache key must include.
func (x TokenExchange) KeyExtra() map[string]string {
	aud := slices.Clone(x.Audiences)
	slices.Sort(aud)
	scopes := slices.Clone(x.Scopes)
	slices.Sort(scopes)
	return map[string]string{
		"exchange":             "token-exchange",
		"audience":             strings.Join(aud, " "),
		"scope":                strings.Join(scopes, " "),
		"subject_token_type":   TokenType(x.SubjectTokenType),
		"requested_token_type": TokenType(x.RequestedTokenType),
		"requested_subject":    x.RequestedSubject,
	}
}

// IsLoopbackHost reports a loopback IP address (127.0.0.0/8, ::1) or
// "localhost"; "127.evil.example.com" is a name, not a loopback address.
func IsLoopbackHost(h string) bool {
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.IsLoopback()
}

// Key is the cache key of the token these settings select, exchange included.
func (o *Spec) Key() tokencache.Key {
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
func (o *Spec) TokenExchange() TokenExchange {
	return TokenExchange{
		SubjectTokenType: o.ExchangeSubject, RequestedTokenType: o.ExchangeRequested,
		Audiences: o.ExchangeAudiences, Scopes: o.ExchangeScopes, RequestedSubject: o.ImpersonateUser,
	}
}

// BaseKey is the cache key of the login, before any exchange.
func (o *Spec) BaseKey() tokencache.Key {
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
		maps.Copy(k.Extra,
			map[string]string{"tenant": o.IPTenant, "toolkit": o.IPEndpoint, "securetoken": o.SecureTokenURL,
				"google": o.GoogleIssuer})
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
func (o *Spec) serverBindings() map[string]string {
	servers := make([]string, len(o.AllowedServers))
	for i, s := range o.AllowedServers {
		servers[i] = strings.ToLower(strings.TrimSuffix(s, "/"))
	}
	slices.Sort(servers)
	return map[string]string{"allowed_servers": strings.Join(slices.Compact(servers), " "),
		"allowed_server_ca": o.AllowedServerCA}
}

// loginBindings are the login settings besides the provider, client and
// scopes that change the token or whom it may be trusted from: the
// password grant's user, the authorization request's extra parameters
// (Auth0's audience, ADFS's resource), the request headers, and how the
// provider's TLS is verified (a token fetched without verification is
// never served to an entry that verifies).
func (o *Spec) loginBindings() map[string]string {
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
	m := map[string]string{"username": o.Username, "auth_params": pairs(o.AuthRequestExtraParams),
		"request_headers": pairs(o.RequestHeaders),
		"ca_files":        strings.Join(cas, ","), "ca_data": strings.TrimSpace(o.CertificateAuthorityData)}
	if o.InsecureSkipTLSVerify {
		m["insecure_skip_tls_verify"] = "true"
	}
	return m
}

// IdentityPlatformProject is the project of an Identity Platform issuer
// (https://securetoken.google.com/PROJECT): its tokens' aud.
func IdentityPlatformProject(issuer string) string {
	u, err := url.Parse(issuer)
	if err != nil {
		return ""
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	return parts[len(parts)-1]
}
