package apiserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/authn"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/serve"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/proxy"
)

// authnOptions builds the authenticator's configuration from the flags.
func proxyAuthnOptions(o *serve.ProxyOptions) (authn.Options, string, error) {
	opts, rule, err := authnOptions(o.AuthConfig, &o.OIDC, nil)
	if err != nil {
		return opts, "", err
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
func upstreamConfig(o *serve.ProxyOptions) (*rest.Config, *url.URL, error) {
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

// Proxy serves until ctx ends.
func (Code) Proxy(ctx context.Context, o *serve.ProxyOptions) error {
	cfg, u, err := upstreamConfig(o)
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
	opts, rule, err := proxyAuthnOptions(o)
	if err != nil {
		return err
	}
	authenticator, err := authn.New(ctx, opts)
	if err != nil {
		return err
	}
	defer authenticator.Close()
	// The issuers' keys first (bounded): a replica that listened before
	// could only answer "not ready" (503, Retry-After).
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	if err := authenticator.WaitReady(wctx); err != nil && ctx.Err() == nil {
		fmt.Fprintf(o.ErrOut, "kubectl-impersonate: proxy: serving before the issuers' keys are loaded (/readyz fails until they are): %s\n", logging.OneLine(err.Error(), 500))
	}
	cancel()
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
		Ready:              proxy.ReadyCheck(u, proxy.HeaderTimeout(transport, o.UpstreamTimeout), authenticator.HealthCheck, time.Second),
		AuthenticatorReady: authenticator.HealthCheck,
		Audit:              audit, Metrics: metrics, CacheTTL: o.CacheTTL(), MaxInFlight: cmp.Or(o.MaxInFlight, -1),
		Log: func(s string) { fmt.Fprintf(o.ErrOut, "kubectl-impersonate: proxy: %s\n", s) }}
	if o.AllowCallerImpersonation {
		h.CallerImpersonation = proxy.SubjectAccessReviewer{Upstream: u, RT: proxy.HeaderTimeout(transport, o.UpstreamTimeout)}
	}
	srv := &proxy.Server{Handler: h, Listen: o.Listen, MetricsAddress: o.MetricsAddress, Certs: certs,
		Listening: func(api, metrics net.Addr) {
			if metrics != nil {
				fmt.Fprintf(o.ErrOut, "kubectl-impersonate: proxy metrics on http://%s/metrics\n", metrics)
			}
			fmt.Fprintf(o.ErrOut, "kubectl-impersonate: proxy for %s listening on https://%s; identities: %s; system: identities %s\n",
				u.Host, api, rule, map[bool]string{true: "allowed", false: "refused"}[o.AllowSystemIdentities])
		}}
	return srv.Run(ctx)
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
