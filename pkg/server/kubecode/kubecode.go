// Package kubecode is the seam between the commands and kube-apiserver's
// own code.
//
//   - The code: its JWT authenticator and configuration types
//     (pkg/server/authn), and the proxy built on them (pkg/server/proxy).
//   - The seam: the interface the commands call and the values they pass,
//     typed, flag-free and light.
//   - kubectl-impersonate-apiserver injects the implementation
//     (pkg/server/kubecode/linked); the other binaries link none of that
//     code (its package initialisers cost every process about 10 ms) and
//     hand the commands that need it to that binary (pkg/cmd/util's RunE).
//
// Each command lives whole in its own package: claims in pkg/cmd/identity,
// proxy in pkg/cmd/serve, setup --authentication-config in pkg/cmd/setup,
// record in pkg/cmd/privilege.
package kubecode

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"time"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/authn/oidcflags"
)

// Code is kube-apiserver's own code, as the commands use it.
type Code interface {
	// Predict runs kube-apiserver's JWT authenticator on a token, as the
	// configuration of the request would (claims).
	Predict(ctx context.Context, r PredictRequest) (Prediction, error)
	// CheckAuthConfig reads an AuthenticationConfiguration file as
	// kube-apiserver validates it and says, in one line with the fix,
	// when it would refuse tokens of issuer whose aud is audience ("":
	// the issuer alone is checked); "" when it accepts them (setup).
	CheckAuthConfig(path, issuer, audience string) (note string, err error)
	// ServeProxy serves the impersonating proxy until ctx ends (proxy).
	ServeProxy(ctx context.Context, c ProxyConfig) error
	// StartRecorder starts record's endpoint on 127.0.0.1 (record).
	StartRecorder(c RecordConfig) (Recorder, error)
	// RunSudoController runs direct mode's grant controller until ctx
	// ends (sudo-controller).
	RunSudoController(ctx context.Context, c SudoControllerConfig) error
}

// SudoControllerConfig is the grant controller of direct mode.
type SudoControllerConfig struct {
	// Kubeconfig is the controller's own credential ("": InCluster).
	Kubeconfig string
	InCluster  bool
	// LeaseNamespace holds the Lease its replicas elect a leader with.
	LeaseNamespace string
	// Interval is how often the leader reconciles.
	Interval time.Duration
	// WebhookListen, when set, is where every replica serves direct mode's
	// fail-closed authorization webhook (TLS with CertFile and KeyFile;
	// client certificates signed by ClientCAFile required when set).
	WebhookListen, CertFile, KeyFile, ClientCAFile string
	// Log receives its lines (stderr).
	Log io.Writer
}

// RecordConfig is record's endpoint: the cluster it forwards to and where
// it writes.
type RecordConfig struct {
	// Upstream is the context's server; Transport sends to it with the
	// context's TLS and credentials (an exec plugin, a client certificate,
	// a token), UpgradeTransport the same over HTTP/1.1 (an SPDY upgrade
	// cannot go over HTTP/2): client-go's, built by the command.
	Upstream                    *url.URL
	Transport, UpgradeTransport http.RoundTripper
	// Impersonates says the context impersonates (--as, a kubeconfig's
	// as:): the command's own impersonation is then refused.
	Impersonates bool
	// Log receives one audit.k8s.io/v1 Event line per authorizer check.
	Log io.Writer
	// Now is the clock of the events (time.Now when nil).
	Now func() time.Time
	// ErrorLog receives the endpoint's own errors, one line each (none
	// when nil).
	ErrorLog io.Writer
}

// Recorder is a running recording endpoint.
type Recorder interface {
	// Endpoint is what the recorded command's kubeconfig holds.
	Endpoint() RecordEndpoint
	// Counts are the checks written, and how many the cluster refused.
	Counts() (written, refused int)
	// Close stops the endpoint and what still runs through it, and says
	// whether a write of the log failed.
	Close() error
}

// Authentication selects the rules kube-apiserver authenticates tokens
// with: an AuthenticationConfiguration file, else its legacy --oidc-*
// flags (their values).
type Authentication struct {
	ConfigFile string
	OIDC       oidcflags.Legacy
}

// PredictRequest is a token and the rules to predict its identity with.
type PredictRequest struct {
	Token string `datapolicy:"token"`
	Authentication
	// Trusted says the issuers were named by the user: their keys check
	// the signature. Otherwise the token's own iss and aud fill the
	// rules, and nothing it names is trusted.
	Trusted bool
	// SkipVerify does not check the signature (--skip-signature-check).
	SkipVerify bool
}

// Prediction is what kube-apiserver would make of a token.
type Prediction struct {
	// Rules describe the rules in one line.
	Rules string
	// Notes explain what the rules would refuse, with the fix.
	Notes             []string
	Predicted         Identity
	SignatureVerified bool
	// Signature says how the signature was checked, or why not.
	Signature string
}

// Identity is what kube-apiserver makes of a token: the user its
// authenticator returns (before the server adds system:authenticated), or
// why it answers 401.
type Identity struct {
	Username string              `json:"username,omitempty"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
	// Refused is the authenticator's reason to refuse the token; empty
	// when the token is accepted.
	Refused string `json:"refused,omitempty"`
}

// allAuthenticated is the group kube-apiserver adds to every
// authenticated user (k8s.io/apiserver's user.AllAuthenticated).
const allAuthenticated = "system:authenticated"

// Differences lists where a predicted identity and the API server's
// SelfSubjectReview disagree. refused401 says the server answered 401.
// system:authenticated, which the server adds to every authenticated
// user, is not a difference.
func Differences(p Identity, server Identity, refused401 bool) []string {
	switch {
	case p.Refused != "" && refused401:
		return nil
	case p.Refused != "":
		return []string{fmt.Sprintf("predicted refused (%s), the API server accepts the token as %q", p.Refused,
			server.Username)}
	case refused401:
		return []string{fmt.Sprintf("predicted %q, the API server refuses the token (401)", p.Username)}
	}
	var d []string
	if p.Username != server.Username {
		d = append(d, fmt.Sprintf("username: predicted %q, the API server says %q", p.Username, server.Username))
	}
	if p.UID != server.UID {
		d = append(d, fmt.Sprintf("uid: predicted %q, the API server says %q", p.UID, server.UID))
	}
	for _, g := range p.Groups {
		if !slices.Contains(server.Groups, g) {
			d = append(d, fmt.Sprintf("group %q predicted, the API server does not report it", g))
		}
	}
	for _, g := range server.Groups {
		if g != allAuthenticated && !slices.Contains(p.Groups, g) {
			d = append(d, fmt.Sprintf("group %q reported by the API server, not predicted from the token", g))
		}
	}
	keys := slices.Collect(maps.Keys(p.Extra))
	for k := range server.Extra {
		if _, ok := p.Extra[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Equal(p.Extra[k], server.Extra[k]) {
			d = append(d, fmt.Sprintf("extra %q: predicted %q, the API server says %q", k, p.Extra[k], server.Extra[k]))
		}
	}
	return d
}

// The proxy's defaults, named once: the command's flags (which do not link
// pkg/server/proxy) and pkg/server/proxy's Handler use them.
const (
	// DefaultProxyCacheTTL is how long an authenticated token's identity
	// is reused: kube-apiserver's token cache's 10 s.
	DefaultProxyCacheTTL = 10 * time.Second
	// DefaultMaxInFlight is kube-apiserver's default
	// --max-requests-inflight.
	DefaultMaxInFlight = 400
)

// The values of ProxyConfig.CallerImpersonationMode.
const (
	CallerImpersonationAuto        = "auto"
	CallerImpersonationConstrained = "constrained"
	CallerImpersonationClassic     = "classic"
)

// RecordEndpoint is how the recorded command reaches record's endpoint.
type RecordEndpoint struct {
	// URL is https://127.0.0.1:PORT.
	URL string
	// CAPEM is its one-time CA.
	CAPEM []byte
	// Token is its one-time bearer token.
	Token string
}

// ProxyConfig is the proxy's configuration (pkg/cmd/serve's flags, as
// values).
type ProxyConfig struct {
	Listen, CertFile, KeyFile string
	MetricsAddress            string
	// Upstream is the API server's URL ("": the upstream kubeconfig's);
	// the proxy's own credential is the pod's service account (InCluster)
	// or UpstreamKubeconfig's.
	Upstream, UpstreamKubeconfig string
	InCluster                    bool
	UpstreamTimeout              time.Duration
	Authentication
	// SigningKeyFile verifies with these keys (a JWKS document or PEM
	// public keys) instead of the issuers' discovery and JWKS.
	SigningKeyFile           string
	AllowSystemIdentities    bool
	AllowCallerImpersonation bool
	CallerImpersonationMode  string
	// Sudo serves time-boxed elevation (deploy/sudo's grants).
	Sudo bool
	// AuditLog is the audit log's file ("-": Log; "": none).
	AuditLog string
	// CacheTTL is the token cache's TTL (negative: none).
	CacheTTL time.Duration
	// MaxInFlight bounds the requests at once (negative: no limit).
	MaxInFlight int
	// Log receives the proxy's own lines (stderr).
	Log io.Writer
}
