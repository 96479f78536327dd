package cmd

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/authn"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/proxy"
)

// ProxyOptions is the proxy command.
type ProxyOptions struct {
	Listen, CertFile, KeyFile    string
	MetricsAddress               string
	Upstream, UpstreamKubeconfig string
	UpstreamTimeout              time.Duration
	InCluster                    bool
	AuthConfig                   string
	OIDC                         OIDCFlags
	SigningKeyFile               string
	AllowSystemIdentities        bool
	AuditLog                     string
	TokenCacheSize               int
	MaxInFlight                  int
	genericiooptions.IOStreams
	global *GlobalOptions
}

// cacheSize is the handler's token cache size: --token-cache-size=0
// authenticates every request (the handler's -1).
func (o *ProxyOptions) cacheSize() int { return cmp.Or(o.TokenCacheSize, -1) }

// NewCmdProxy builds proxy.
func NewCmdProxy(g *GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ProxyOptions{IOStreams: streams, global: g, Listen: ":8443", TokenCacheSize: proxy.DefaultCacheSize, MaxInFlight: proxy.DefaultMaxInFlight,
		UpstreamTimeout: 60 * time.Second}
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

Refused: requests carrying Impersonate-* headers or naming Authorization,
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
		RunE: runE(o),
	}
	f := cmd.Flags()
	f.StringVar(&o.Listen, "listen", o.Listen, "Address to serve HTTPS on")
	f.StringVar(&o.CertFile, "tls-cert-file", "", "Serving certificate (PEM); reloaded when the file changes")
	f.StringVar(&o.KeyFile, "tls-private-key-file", "", "Serving key (PEM); reloaded when the file changes")
	f.StringVar(&o.MetricsAddress, "metrics-address", "", "Address to serve Prometheus metrics on, over HTTP (empty: off; keep it on loopback or a private network)")
	f.StringVar(&o.Upstream, "upstream", "", "API server URL (default: the upstream kubeconfig's)")
	f.StringVar(&o.UpstreamKubeconfig, "upstream-kubeconfig", "", "Kubeconfig of the proxy's own credential")
	f.BoolVar(&o.InCluster, "in-cluster", false, "Use the pod's service account as the proxy's credential")
	f.DurationVar(&o.UpstreamTimeout, "upstream-timeout", o.UpstreamTimeout, "How long to wait for the API server's response headers (streams are not cut)")
	f.StringVar(&o.AuthConfig, "authentication-config", "", "AuthenticationConfiguration file, as kube-apiserver's --authentication-config (instead of the --oidc-* flags)")
	o.OIDC.AddFlags(f, map[string]string{"oidc-audience": "oidc-client-id", "username-claim": "oidc-username-claim",
		"username-prefix": "oidc-username-prefix", "groups-claim": "oidc-groups-claim", "groups-prefix": "oidc-groups-prefix"}, streams.ErrOut)
	f.StringVar(&o.SigningKeyFile, "oidc-signing-key-file", "", "Verify with these keys (a JWKS document or PEM public keys) instead of the issuers' discovery and JWKS")
	f.BoolVar(&o.AllowSystemIdentities, "allow-system-identities", false, "Let tokens map to system: users and groups (refused by default: a token should not make anyone a node, a controller or system:masters)")
	f.StringVar(&o.AuditLog, "audit-log", "-", "Audit log file, one JSON line per request with the refusal reason (- for stderr, empty for none); tokens are never written")
	f.IntVar(&o.TokenCacheSize, "token-cache-size", o.TokenCacheSize, "Authenticated tokens whose identity is kept until their exp (0 authenticates every request)")
	f.IntVar(&o.MaxInFlight, "max-requests-inflight", o.MaxInFlight, "Requests served at once, watches and upgrades aside, as kube-apiserver's flag; more get 429 (0: no limit)")
	return cmd
}

// Complete routes the authenticator's own log lines (k8s.io/apiserver logs
// through klog) to stderr.
func (o *ProxyOptions) Complete() error {
	routeKlog(o.ErrOut, true)
	return nil
}

// Validate checks the flags.
func (o *ProxyOptions) Validate() error {
	switch {
	case o.CertFile == "" || o.KeyFile == "":
		return errors.New("--tls-cert-file and --tls-private-key-file are required: the proxy receives bearer tokens")
	case o.TokenCacheSize < 0:
		return errors.New("--token-cache-size must not be negative (0 authenticates every request)")
	case o.UpstreamTimeout <= 0:
		return errors.New("--upstream-timeout must be positive")
	case o.AuthConfig != "" && len(o.OIDC.Given()) > 0:
		return fmt.Errorf("--authentication-config excludes the --oidc-* flags (%s): put the issuer and its mappings in the configuration", strings.Join(o.OIDC.Given(), ", "))
	case o.AuthConfig == "" && o.OIDC.IssuerURL == "":
		return errors.New("give --oidc-issuer-url (with --oidc-client-id) or --authentication-config")
	case o.AuthConfig == "" && len(o.OIDC.ClientIDs) == 0:
		return errors.New("--oidc-client-id is required: the audience the tokens are issued to")
	case o.InCluster == (o.UpstreamKubeconfig != ""):
		return errors.New("give exactly one of --in-cluster and --upstream-kubeconfig for the proxy's own credential")
	}
	return nil
}

// authnOptions builds the authenticator's configuration from the flags.
func (o *ProxyOptions) authnOptions() (authn.Options, string, error) {
	var opts authn.Options
	var rule string
	if o.AuthConfig != "" {
		cfg, err := authn.LoadConfigFile(o.AuthConfig)
		if err != nil {
			return opts, "", err
		}
		opts.Config = cfg
		rule = fmt.Sprintf("the %d jwt authenticator(s) of %s", len(cfg.JWT), o.AuthConfig)
	} else {
		l, err := o.OIDC.Legacy()
		if err != nil {
			return opts, "", err
		}
		opts.Config, opts.SigningAlgs = l.Config()
		m := opts.Config.JWT[0].ClaimMappings
		rule = fmt.Sprintf("username = %q + claim %q", *m.Username.Prefix, m.Username.Claim)
		if m.Groups.Claim != "" {
			rule += fmt.Sprintf(", groups = %q + claim %q", *m.Groups.Prefix, m.Groups.Claim)
		}
	}
	if o.SigningKeyFile != "" {
		b, err := os.ReadFile(o.SigningKeyFile)
		if err != nil {
			return opts, "", fmt.Errorf("reading --oidc-signing-key-file: %w", err)
		}
		opts.Keys, opts.StaticKeys = authn.KeysStatic, b
	}
	return opts, rule, nil
}

// upstreamConfig loads the proxy's own credential and refuses one that
// impersonates by itself: its Impersonate-* headers would replace the
// caller's.
func (o *ProxyOptions) upstreamConfig() (*rest.Config, *url.URL, error) {
	var cfg *rest.Config
	var err error
	if o.InCluster {
		cfg, err = rest.InClusterConfig()
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags("", o.UpstreamKubeconfig)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("loading the proxy's credential: %w", err)
	}
	imp := cfg.Impersonate
	if imp.UserName != "" || imp.UID != "" || len(imp.Groups) > 0 || len(imp.Extra) > 0 {
		return nil, nil, errors.New("the upstream kubeconfig impersonates (as, as-groups, as-uid or as-user-extra): remove it, the proxy impersonates each caller")
	}
	upstream := cmp.Or(o.Upstream, cfg.Host)
	u, err := url.Parse(upstream)
	if err != nil || u.Host == "" || u.Scheme != "https" {
		return nil, nil, fmt.Errorf("--upstream %q is not an https URL", upstream)
	}
	return cfg, u, nil
}

// Run serves until ctx ends.
func (o *ProxyOptions) Run(ctx context.Context) error {
	cfg, u, err := o.upstreamConfig()
	if err != nil {
		return err
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return fmt.Errorf("building the upstream transport: %w", err)
	}
	// Upgrades (exec, attach, port-forward) need HTTP/1.1 to the API server.
	upCfg := rest.CopyConfig(cfg)
	upCfg.TLSClientConfig.NextProtos = []string{"http/1.1"}
	upgradeTransport, err := rest.TransportFor(upCfg)
	if err != nil {
		return fmt.Errorf("building the upstream transport for upgrades: %w", err)
	}
	opts, rule, err := o.authnOptions()
	if err != nil {
		return err
	}
	authenticator, err := authn.New(ctx, opts)
	if err != nil {
		return err
	}
	defer authenticator.Close()
	audit, closeAudit, err := openAudit(o.AuditLog, o.ErrOut)
	if err != nil {
		return err
	}
	defer closeAudit()
	certs := &proxy.CertReloader{CertFile: o.CertFile, KeyFile: o.KeyFile,
		OnError: func(err error) {
			fmt.Fprintf(o.ErrOut, "kubectl-impersonate: proxy: keeping the previous certificate: %v\n", err)
		}}
	if err := certs.Load(); err != nil {
		return err
	}
	metrics := proxy.NewMetrics()
	h := &proxy.Handler{Upstream: u,
		Transport:        proxy.HeaderTimeout(transport, o.UpstreamTimeout),
		UpgradeTransport: proxy.HeaderTimeout(upgradeTransport, o.UpstreamTimeout),
		Authenticator:    authenticator, AllowSystemIdentities: o.AllowSystemIdentities,
		Ready: proxy.ReadyCheck(u, proxy.HeaderTimeout(transport, o.UpstreamTimeout), authenticator.HealthCheck, time.Second),
		Audit: audit, Metrics: metrics, CacheSize: o.cacheSize(), MaxInFlight: cmp.Or(o.MaxInFlight, -1),
		Log: func(s string) { fmt.Fprintf(o.ErrOut, "kubectl-impersonate: proxy: %s\n", s) }}
	l, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", o.Listen, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 90 * time.Second,
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.GetCertificate}}
	servers := []*http.Server{srv}
	if o.MetricsAddress != "" {
		ml, err := net.Listen("tcp", o.MetricsAddress)
		if err != nil {
			return fmt.Errorf("listening on --metrics-address %s: %w", o.MetricsAddress, err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", metrics.Handler())
		msrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, msrv)
		go func() { _ = msrv.Serve(ml) }()
		fmt.Fprintf(o.ErrOut, "kubectl-impersonate: proxy metrics on http://%s/metrics\n", ml.Addr())
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, s := range servers {
			_ = s.Shutdown(sctx)
		}
	}()
	fmt.Fprintf(o.ErrOut, "kubectl-impersonate: proxy for %s listening on https://%s; identities: %s; system: identities %s\n",
		u.Host, l.Addr(), rule, map[bool]string{true: "allowed", false: "refused"}[o.AllowSystemIdentities])
	if err := srv.ServeTLS(l, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// openAudit opens the audit log: "-" is stderr, "" none, else a 0600 file.
func openAudit(path string, stderr io.Writer) (io.Writer, func(), error) {
	switch path {
	case "":
		return nil, func() {}, nil
	case "-":
		return stderr, func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("opening --audit-log: %w", err)
	}
	return f, func() { _ = f.Close() }, nil
}
