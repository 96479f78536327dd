package cmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/inspect"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/login"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/oidc"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/proxy"
)

// ProxyOptions is the proxy command.
type ProxyOptions struct {
	Listen, CertFile, KeyFile     string
	Upstream, UpstreamKubeconfig  string
	InCluster                     bool
	Issuer, IssuerCA              string
	Audiences                     []string
	UsernameClaim, UsernamePrefix string
	GroupsClaim, GroupsPrefix     string
	AuthConfig                    string
	AuditLog                      string
	TokenCacheSize                int
	genericiooptions.IOStreams
	global    *GlobalOptions
	prefixSet bool
}

// NewCmdProxy builds proxy.
func NewCmdProxy(g *GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ProxyOptions{IOStreams: streams, global: g, Listen: ":8443", UsernameClaim: "sub", TokenCacheSize: proxy.DefaultCacheSize}
	cmd := &cobra.Command{
		Use:   "proxy",
		Short: "Serve an impersonating proxy in front of an API server that cannot trust the OIDC provider",
		Long: `proxy verifies each request's ID token (JWKS signature, iss, aud, exp), maps its
claims to a username and groups (the legacy --oidc-* rules or an
AuthenticationConfiguration, as "claims" does), and forwards the request with its own
credential and Impersonate-User/-Group/-Uid headers, streaming and upgrades included.
Requests that carry Impersonate-* headers themselves are refused.`,
		Example: `  kubectl-impersonate proxy --tls-cert-file=tls.crt --tls-private-key-file=tls.key --in-cluster \
    --oidc-issuer-url=https://dex.example.com --oidc-audience=kubernetes \
    --username-claim=email --groups-claim=groups --groups-prefix=oidc:`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	f := cmd.Flags()
	f.StringVar(&o.Listen, "listen", o.Listen, "Address to serve HTTPS on")
	f.StringVar(&o.CertFile, "tls-cert-file", "", "Serving certificate (PEM)")
	f.StringVar(&o.KeyFile, "tls-private-key-file", "", "Serving key (PEM)")
	f.StringVar(&o.Upstream, "upstream", "", "API server URL (default: the upstream kubeconfig's)")
	f.StringVar(&o.UpstreamKubeconfig, "upstream-kubeconfig", "", "Kubeconfig of the proxy's own credential")
	f.BoolVar(&o.InCluster, "in-cluster", false, "Use the pod's service account as the proxy's credential")
	f.StringVar(&o.Issuer, "oidc-issuer-url", "", "Issuer of the tokens to accept")
	f.StringVar(&o.IssuerCA, "oidc-ca-file", "", "PEM file of a CA for the issuer")
	f.StringSliceVar(&o.Audiences, "oidc-audience", nil, "Accepted audience (client ID), repeatable")
	f.StringVar(&o.UsernameClaim, "username-claim", o.UsernameClaim, "Legacy rules: --oidc-username-claim")
	f.StringVar(&o.UsernamePrefix, "username-prefix", "", "Legacy rules: --oidc-username-prefix (unset: \"<issuer>#\" unless the claim is email; - for none)")
	f.StringVar(&o.GroupsClaim, "groups-claim", "", "Legacy rules: --oidc-groups-claim")
	f.StringVar(&o.GroupsPrefix, "groups-prefix", "", "Legacy rules: --oidc-groups-prefix")
	f.StringVar(&o.AuthConfig, "authentication-config", "", "AuthenticationConfiguration file for the mapping (instead of the legacy rules)")
	f.StringVar(&o.AuditLog, "audit-log", "-", "Audit log file, one JSON line per request (- for stderr, empty for none)")
	f.IntVar(&o.TokenCacheSize, "token-cache-size", o.TokenCacheSize, "Verified tokens whose identity is kept until their exp (0 verifies every request)")
	cmd.PreRun = func(c *cobra.Command, _ []string) { o.prefixSet = c.Flags().Changed("username-prefix") }
	return cmd
}

// Complete does nothing.
func (o *ProxyOptions) Complete() error { return nil }

// Validate checks the flags.
func (o *ProxyOptions) Validate() error {
	switch {
	case o.CertFile == "" || o.KeyFile == "":
		return errors.New("--tls-cert-file and --tls-private-key-file are required: the proxy receives bearer tokens")
	case o.TokenCacheSize < 0:
		return errors.New("--token-cache-size must not be negative (0 verifies every request)")
	case o.Issuer == "":
		return errors.New("--oidc-issuer-url is required")
	case len(o.Audiences) == 0:
		return errors.New("--oidc-audience is required (the client ID the tokens are issued to)")
	case o.InCluster == (o.UpstreamKubeconfig != ""):
		return errors.New("give exactly one of --in-cluster and --upstream-kubeconfig for the proxy's own credential")
	}
	return nil
}

// Run serves until ctx ends.
func (o *ProxyOptions) Run(ctx context.Context) error {
	var cfg *rest.Config
	var err error
	if o.InCluster {
		cfg, err = rest.InClusterConfig()
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags("", o.UpstreamKubeconfig)
	}
	if err != nil {
		return fmt.Errorf("loading the proxy's credential: %w", err)
	}
	upstream := o.Upstream
	if upstream == "" {
		upstream = cfg.Host
	}
	u, err := url.Parse(upstream)
	if err != nil || u.Host == "" {
		return fmt.Errorf("--upstream %q is not a URL", upstream)
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
	hc, err := login.NewHTTPClient(o.IssuerCA, false, 10*time.Second)
	if err != nil {
		return err
	}
	verifier, err := oidc.NewClaimsVerifier(ctx, hc, o.Issuer, o.Audiences)
	if err != nil {
		return err
	}
	mapper, err := o.mapper()
	if err != nil {
		return err
	}
	var audit io.Writer
	switch o.AuditLog {
	case "":
	case "-":
		audit = o.ErrOut
	default:
		f, err := os.OpenFile(o.AuditLog, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return fmt.Errorf("opening --audit-log: %w", err)
		}
		defer f.Close()
		audit = f
	}
	h := &proxy.Handler{Upstream: u, Transport: transport, UpgradeTransport: upgradeTransport, Verifier: verifier, Map: mapper, Audit: audit, CacheSize: cmp.Or(o.TokenCacheSize, -1)}
	l, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", o.Listen, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Fprintf(o.ErrOut, "kubectl-impersonate: proxy for %s listening on https://%s\n", u.Host, l.Addr())
	if err := srv.ServeTLS(l, o.CertFile, o.KeyFile); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (o *ProxyOptions) mapper() (proxy.Mapper, error) {
	if o.AuthConfig != "" {
		b, err := os.ReadFile(o.AuthConfig)
		if err != nil {
			return nil, fmt.Errorf("reading --authentication-config: %w", err)
		}
		cfg, err := inspect.ParseAuthenticationConfiguration(b)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, t *inspect.Token) inspect.Identity {
			return inspect.PredictStructured(ctx, t, cfg)
		}, nil
	}
	rules := inspect.LegacyRules{IssuerURL: o.Issuer, UsernameClaim: o.UsernameClaim, GroupsClaim: o.GroupsClaim, GroupsPrefix: o.GroupsPrefix}
	if o.prefixSet {
		p := o.UsernamePrefix
		rules.UsernamePrefix = &p
	}
	return func(_ context.Context, t *inspect.Token) inspect.Identity { return inspect.PredictLegacy(t, rules) }, nil
}
