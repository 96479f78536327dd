package linked

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/kubeapi"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/authn"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/identity"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/kubecode"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/proxy"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/sudo"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/upstream"
)

// authnOptions builds the authenticator's configuration from the flags.
func proxyAuthnOptions(o kubecode.ProxyConfig) (authn.Options, string, error) {
	opts, rule, err := authnOptions(o.Authentication, nil)
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
func upstreamConfig(o kubecode.ProxyConfig) (*rest.Config, *url.URL, error) {
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
		return nil, nil, errors.New("the upstream kubeconfig impersonates (as, as-groups, as-uid or as-user-extra): " +
			"remove it, the proxy impersonates each caller")
	}
	upstream := cmp.Or(o.Upstream, cfg.Host)
	u, err := url.Parse(upstream)
	if err != nil || u.Host == "" || u.Scheme != "https" {
		return nil, nil, fmt.Errorf("--upstream %q is not an https URL", upstream)
	}
	return cfg, u, nil
}

// ServeProxy serves the proxy until ctx ends.
func (Code) ServeProxy(ctx context.Context, o kubecode.ProxyConfig) error {
	cfg, u, err := upstreamConfig(o)
	if err != nil {
		return err
	}
	transport, upgradeTransport, err := kubeapi.UpstreamTransports(cfg)
	if err != nil {
		return err
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
		logging.Noticef(o.Log, "proxy: serving before the issuers' keys are loaded (/readyz fails until they are): %s",
			logging.OneLine(err.Error(), 500))
	}
	cancel()
	audit, closeAudit, err := openAudit(o.AuditLog, o.Log)
	if err != nil {
		return err
	}
	defer closeAudit()
	certs := &proxy.CertReloader{CertFile: o.CertFile, KeyFile: o.KeyFile,
		OnError: func(err error) {
			logging.Noticef(o.Log, "proxy: keeping the previous certificate: %v", err)
		}}
	if err := certs.Load(); err != nil {
		return err
	}
	metrics := proxy.NewMetrics()
	h := &proxy.Handler{Upstream: u,
		Transport:        upstream.HeaderTimeout(transport, o.UpstreamTimeout),
		UpgradeTransport: upstream.HeaderTimeout(upgradeTransport, o.UpstreamTimeout),
		Authenticator:    authenticator, AllowSystemIdentities: o.AllowSystemIdentities,
		Ready: upstream.ReadyCheck(u, upstream.HeaderTimeout(transport, o.UpstreamTimeout),
			authenticator.HealthCheck, time.Second),
		AuthenticatorReady: authenticator.HealthCheck,
		Audit:              audit, Metrics: metrics, CacheTTL: o.CacheTTL, MaxInFlight: o.MaxInFlight,
		Log: func(s string) { logging.Notice(o.Log, "proxy: "+s) }}
	if o.AllowCallerImpersonation {
		rt := upstream.HeaderTimeout(transport, o.UpstreamTimeout)
		h.CallerImpersonation = identity.SubjectAccessReviewer{Upstream: u, RT: rt}
		var why string
		h.ConstrainedImpersonation, why = callerImpersonationMode(ctx, o.CallerImpersonationMode, u, rt)
		logging.Noticef(o.Log, "proxy: kubectl --as is decided by kube-apiserver's %s", why)
	}
	if o.Sudo {
		watchCfg := rest.CopyConfig(cfg)
		watchCfg.Host = u.String()
		dyn, err := dynamic.NewForConfig(watchCfg)
		if err != nil {
			return fmt.Errorf("making the client that watches sudo grants: %w", err)
		}
		store := sudo.NewStore()
		go store.Watch(ctx, dyn, func(s string) { logging.Notice(o.Log, "proxy: "+s) })
		h.Sudo = store
		logging.Noticef(o.Log, "proxy: serving sudo grants (kubectl impersonate sudo): elevated requests wait for "+
			"the watch of sudogrants and sudorequests")
	}
	srv := &proxy.Server{Handler: h, Listen: o.Listen, MetricsAddress: o.MetricsAddress, Certs: certs,
		Listening: func(api, metrics net.Addr) {
			if metrics != nil {
				logging.Noticef(o.Log, "proxy metrics on http://%s/metrics", metrics)
			}
			logging.Noticef(o.Log, "proxy for %s listening on https://%s; identities: %s; system: identities %s",
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

// callerImpersonationMode says whether kube-apiserver's constrained
// impersonation filter decides callers' impersonation (else its classic
// one), and why: as --caller-impersonation-mode says, or, for auto, as the
// upstream's version does (ConstrainedImpersonation is on by default from
// 1.36). A version that cannot be read means classic: the constrained
// filter would allow what a 1.35 API server refuses.
func callerImpersonationMode(ctx context.Context, mode string, upstream *url.URL, rt http.RoundTripper) (bool, string) {
	switch mode {
	case kubecode.CallerImpersonationConstrained:
		return true, "constrained impersonation filter (--caller-impersonation-mode=constrained)"
	case kubecode.CallerImpersonationClassic:
		return false, "classic impersonation filter (--caller-impersonation-mode=classic)"
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := upstreamVersion(ctx, upstream, rt)
	if err != nil {
		return false,
			"classic impersonation filter: the upstream's version is unknown (" + logging.OneLine(err.Error(), 200) +
				"); --caller-impersonation-mode=constrained for 1.36 and later"
	}
	if v.AtLeast(version.MajorMinor(1, 36)) {
		return true,
			"constrained impersonation filter (the upstream is " + v.String() +
				"; --caller-impersonation-mode=classic if its ConstrainedImpersonation gate is off)"
	}
	return false, "classic impersonation filter (the upstream is " + v.String() + ")"
}

// upstreamVersion reads the upstream's /version.
func upstreamVersion(ctx context.Context, upstream *url.URL, rt http.RoundTripper) (*version.Version, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, upstream.JoinPath("/version").String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var info struct {
		GitVersion string `json:"gitVersion"`
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /version: HTTP %d", resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&info); err != nil {
		return nil, fmt.Errorf("GET /version: %w", err)
	}
	return version.ParseGeneric(info.GitVersion)
}
