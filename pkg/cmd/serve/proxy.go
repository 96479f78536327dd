package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/kubecode"
)

// ProxyOptions is the proxy command.
type ProxyOptions struct {
	Listen, CertFile, KeyFile    string
	MetricsAddress               string
	Upstream, UpstreamKubeconfig string
	UpstreamTimeout              time.Duration
	InCluster                    bool
	AuthConfig                   string
	OIDC                         cmdutil.OIDCFlags
	SigningKeyFile               string
	AllowSystemIdentities        bool
	AllowCallerImpersonation     bool
	CallerImpersonationMode      string
	Sudo                         bool
	AuditLog                     string
	TokenCacheSize               int
	TokenCacheTTL                time.Duration
	MaxInFlight                  int
	genericiooptions.IOStreams
	global *cmdutil.GlobalOptions
}

// CacheTTL is the handler's token cache TTL: --token-cache-ttl=0 (or the
// deprecated --token-cache-size=0) authenticates every request (the
// handler's -1).
func (o *ProxyOptions) CacheTTL() time.Duration {
	if o.TokenCacheTTL == 0 || o.TokenCacheSize == 0 {
		return -1
	}
	return o.TokenCacheTTL
}

// NewCmdProxy builds proxy.
func NewCmdProxy(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ProxyOptions{IOStreams: streams, global: g, Listen: ":8443", TokenCacheSize: -1,
		TokenCacheTTL: kubecode.DefaultProxyCacheTTL, MaxInFlight: kubecode.DefaultMaxInFlight,
		UpstreamTimeout: 60 * time.Second, CallerImpersonationMode: kubecode.CallerImpersonationAuto}
	cmd := &cobra.Command{
		Use:   "proxy",
		Short: "Serve an impersonating proxy in front of an API server that cannot trust the OIDC provider",
		Long: `proxy authenticates each request's bearer token with kube-apiserver's own JWT
authenticator (k8s.io/apiserver), configured by an AuthenticationConfiguration
(--authentication-config, apiserver.config.k8s.io/v1 or v1beta1, validated as
kube-apiserver validates it) or by kube-apiserver's legacy --oidc-* flags
(converted as kube-apiserver converts them; its flag names are accepted too).
It forwards the request with its own credential and Impersonate-User, -Group,
-Uid and -Extra-* headers, streaming and upgrades included.

With --allow-caller-impersonation, a caller's own Impersonate-User, -Group, -Uid
and -Extra-* headers (kubectl --as, --as-group, --as-uid) are decided by
kube-apiserver's own impersonation filter, which asks kube-apiserver its
SubjectAccessReviews about the authenticated caller (the proxy's credential
needs create on subjectaccessreviews): constrained impersonation
(impersonate:user-info and impersonate-on:user-info:VERB, Kubernetes 1.36+)
with the classic impersonate verb as its fallback, or the classic verb alone
against 1.35 (--caller-impersonation-mode). The request then goes as that
identity, with the caller under the extra kubectl-impersonate.io/original-user,
which kube-apiserver's audit log shows; a refusal is kube-apiserver's Status.

Refused: requests carrying Impersonate-* headers (without that flag, or that the
authorizer does not allow the caller) or naming Authorization,
Impersonate-* or X-Remote-* in Connection (403), paths with dot segments (400),
identities with leading or trailing white space or control characters, and
system: users and groups unless --allow-system-identities (403). X-Remote-*
headers are always removed; underscore spellings (Impersonate_User,
X_Remote_User) count as the dashed ones. More than --max-requests-inflight
requests at once (watches and upgrades aside) get 429. /readyz checks the
upstream's /readyz and the issuers' keys, and logs why it fails rather than
telling the caller; metrics are served on --metrics-address only.`,
		Example: `  # Legacy flags, as kube-apiserver takes them
  kubectl-impersonate proxy --tls-cert-file=tls.crt --tls-private-key-file=tls.key --in-cluster \
    --oidc-issuer-url=https://dex.example.com --oidc-client-id=kubernetes \
    --oidc-username-claim=email --oidc-groups-claim=groups --oidc-groups-prefix=oidc:

  # A structured AuthenticationConfiguration, metrics on loopback
  kubectl-impersonate proxy --tls-cert-file=tls.crt --tls-private-key-file=tls.key \
    --upstream-kubeconfig=proxy.kubeconfig --authentication-config=authn.yaml \
    --metrics-address=127.0.0.1:9090`,
		Args: cobra.NoArgs,
		RunE: g.RunE(o),
	}
	o.addFlags(cmd.Flags())
	return cmd
}

// addFlags binds the proxy's flags to f.
func (o *ProxyOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.Listen, "listen", o.Listen, "Address to serve HTTPS on")
	f.StringVar(&o.CertFile, "tls-cert-file", "", "Serving certificate (PEM); reloaded when the file changes")
	f.StringVar(&o.KeyFile, "tls-private-key-file", "", "Serving key (PEM); reloaded when the file changes")
	f.StringVar(&o.MetricsAddress, "metrics-address", "", "Address to serve Prometheus metrics on, over HTTP (empty: "+
		"off; keep it on loopback or a private network)")
	f.StringVar(&o.Upstream, "upstream", "", "API server URL (default: the upstream kubeconfig's)")
	f.StringVar(&o.UpstreamKubeconfig, "upstream-kubeconfig", "", "Kubeconfig of the proxy's own credential")
	f.BoolVar(&o.InCluster, "in-cluster", false, "Use the pod's service account as the proxy's credential")
	f.DurationVar(&o.UpstreamTimeout, "upstream-timeout", o.UpstreamTimeout, "How long to wait for the API server's "+
		"response headers (streams are not cut)")
	f.StringVar(&o.AuthConfig, "authentication-config", "", "AuthenticationConfiguration file, as kube-apiserver's "+
		"--authentication-config (instead of the --oidc-* flags)")
	o.OIDC.AddFlags(f, map[string]string{"oidc-audience": "oidc-client-id", "username-claim": "oidc-username-claim",
		"username-prefix": "oidc-username-prefix", "groups-claim": "oidc-groups-claim",
		"groups-prefix": "oidc-groups-prefix"}, o.ErrOut)
	f.StringVar(&o.SigningKeyFile, "oidc-signing-key-file", "", "Verify with these keys (a JWKS document or PEM "+
		"public keys) instead of the issuers' discovery and JWKS")
	f.BoolVar(&o.AllowCallerImpersonation, "allow-caller-impersonation", false, "Honour a caller's Impersonate-* "+
		"headers (kubectl --as) when a SubjectAccessReview says the caller may impersonate them; the caller goes "+
		"upstream as the extra kubectl-impersonate.io/original-user")
	f.StringVar(&o.CallerImpersonationMode, "caller-impersonation-mode", o.CallerImpersonationMode,
		"Which impersonation filter of kube-apiserver decides --allow-caller-impersonation: constrained (1.36+, "+
			"where its feature gate is on by default), classic (1.35, or a cluster that turned the gate off), or "+
			"auto (constrained when the upstream's /version is 1.36 or later)")
	f.BoolVar(&o.Sudo, "sudo", false, "Serve time-boxed, approved elevation (kubectl impersonate sudo, deploy/sudo): "+
		"a caller impersonating itself with the extra kubectl-impersonate.io/sudo-grant=NAMESPACE/NAME goes upstream "+
		"with that live grant's group, reason and ticket until it ends (the proxy's credential needs list and watch "+
		"on sudogrants and sudorequests)")
	f.BoolVar(&o.AllowSystemIdentities, "allow-system-identities", false, "Let tokens map to system: users and "+
		"groups (refused by default: a token should not make anyone a node, a controller or system:masters)")
	f.StringVar(&o.AuditLog, "audit-log", "-", "Audit log file, one JSON line per request with the refusal reason (- "+
		"for stderr, empty for none); tokens are never written")
	f.DurationVar(&o.TokenCacheTTL, "token-cache-ttl", o.TokenCacheTTL, "How long an authenticated token's identity "+
		"is reused, as kube-apiserver's token cache (0 authenticates every request)")
	f.IntVar(&o.TokenCacheSize, "token-cache-size", o.TokenCacheSize, "0 authenticates every request; other values "+
		"are ignored")
	_ = f.MarkDeprecated("token-cache-size", "the cache is kube-apiserver's, bounded by time: use --token-cache-ttl "+
		"(0 turns it off)")
	f.IntVar(&o.MaxInFlight, "max-requests-inflight", o.MaxInFlight, "Requests served at once, watches and upgrades "+
		"aside, as kube-apiserver's flag; more get 429 (0: no limit)")
}

// Complete routes the authenticator's own log lines (k8s.io/apiserver logs
// through klog) to stderr.
func (o *ProxyOptions) Complete(ctx context.Context, args []string) error {
	cmdutil.RouteKlog(o.ErrOut, true)
	return nil
}

// Validate checks the flags.
func (o *ProxyOptions) Validate() error {
	switch {
	case o.CertFile == "" || o.KeyFile == "":
		return errors.New("--tls-cert-file and --tls-private-key-file are required: the proxy receives bearer tokens")
	case o.TokenCacheTTL < 0:
		return errors.New("--token-cache-ttl must not be negative (0 authenticates every request)")
	case o.UpstreamTimeout <= 0:
		return errors.New("--upstream-timeout must be positive")
	case o.AuthConfig != "" && len(o.OIDC.Given()) > 0:
		return fmt.Errorf("--authentication-config excludes the --oidc-* flags (%s): put the issuer and its mappings "+
			"in the configuration", strings.Join(o.OIDC.Given(), ", "))
	case o.AuthConfig == "" && o.OIDC.IssuerURL == "":
		return errors.New("give --oidc-issuer-url (with --oidc-client-id) or --authentication-config")
	case o.AuthConfig == "" && len(o.OIDC.ClientIDs) == 0:
		return errors.New("--oidc-client-id is required: the audience the tokens are issued to")
	case o.InCluster == (o.UpstreamKubeconfig != ""):
		return errors.New("give exactly one of --in-cluster and --upstream-kubeconfig for the proxy's own credential")
	case !slices.Contains([]string{kubecode.CallerImpersonationAuto, kubecode.CallerImpersonationConstrained,
		kubecode.CallerImpersonationClassic}, o.CallerImpersonationMode):
		return fmt.Errorf("--caller-impersonation-mode %q is not one of auto, constrained, classic",
			o.CallerImpersonationMode)
	}
	return nil
}

// Run serves the proxy with kube-apiserver's authenticator (the seam's; in
// kubectl-impersonate-apiserver) until ctx ends.
func (o *ProxyOptions) Run(ctx context.Context) error {
	oidc, err := o.OIDC.Values()
	if err != nil {
		return err
	}
	return o.global.APIServer.ServeProxy(ctx,
		kubecode.ProxyConfig{Listen: o.Listen, CertFile: o.CertFile, KeyFile: o.KeyFile,
			MetricsAddress: o.MetricsAddress,
			Upstream:       o.Upstream, UpstreamKubeconfig: o.UpstreamKubeconfig, InCluster: o.InCluster,
			UpstreamTimeout:       o.UpstreamTimeout,
			Authentication:        kubecode.Authentication{ConfigFile: o.AuthConfig, OIDC: oidc},
			SigningKeyFile:        o.SigningKeyFile,
			AllowSystemIdentities: o.AllowSystemIdentities, AllowCallerImpersonation: o.AllowCallerImpersonation,
			CallerImpersonationMode: o.CallerImpersonationMode, Sudo: o.Sudo,
			AuditLog: o.AuditLog, CacheTTL: o.CacheTTL(), MaxInFlight: cmp.Or(o.MaxInFlight, -1),
			Log: o.ErrOut})
}

// NeedsAPIServer: the proxy always runs kube-apiserver's authenticator.
func (o *ProxyOptions) NeedsAPIServer() bool { return true }
