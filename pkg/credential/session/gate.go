package session

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/execcred"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/safefile"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/credspec"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
)

// Gate is the one way a cached token leaves the cache for a server in the
// full binary (test/repo's TestOneTokenGate keeps it so).
//
//   - cfg is the REST configuration a client of the plugin's own
//     (completion, status --check, whoami, groups, claims) would use, after
//     every kubectl flag.
//   - Gate judges the cluster cfg names exactly as get-token judges the
//     cluster kubectl names (credspec.Admit: https, the allowed servers and
//     what the cluster entry does with the token, the cluster's own
//     audience).
//   - It reads the token get-token would hand out now, without renewing it.
//   - It returns a copy of cfg bound to that cluster and carrying that token
//     alone: no exec entry to run, no other credential, the TLS and proxy
//     settings that were judged.
//
// store nil opens the settings' own cache.
func (s *Session) Gate(
	ctx context.Context, cfg *rest.Config, store tokencache.Store,
) (*rest.Config, *TokenSource, error) {
	// The CA file is read once, bounded and never from a FIFO: what is
	// judged is what the transport uses (a file read again later could
	// have changed under a CA pin).
	cfg, err := InlineFiles(cfg)
	if err != nil {
		return nil, nil, err
	}
	// What kubectl would send get-token: the cluster when the entry asks
	// for it (provideClusterInfo), as client-go builds it from cfg.
	var cluster *execcred.Cluster
	if s.Exec != nil && s.Exec.ProvideClusterInfo {
		c, err := ExecCluster(cfg)
		if err != nil {
			return nil, nil, err
		}
		cluster = c
	}
	if cluster == nil {
		// This client sends the token itself: its server is known even
		// when get-token would not be told it (Admit checks it otherwise).
		if err := credspec.CheckScheme(cfg.Host); err != nil {
			return nil, nil, err
		}
	}
	a := *s.unbound
	if err := a.Admit(cluster); err != nil {
		return nil, nil, err
	}
	if store == nil {
		if store, err = a.NewStore(Quiet); err != nil {
			return nil, nil, err
		}
	}
	token, ts, err := cachedToken(ctx, &a, store)
	if err != nil {
		return nil, ts, err
	}
	bound := rest.AnonymousClientConfig(cfg)
	bound.BearerToken = token
	bound.Impersonate = cfg.Impersonate
	return bound, ts, nil
}

// maxKubeconfigFile bounds a file a kubeconfig names (a CA bundle, a
// certificate, a key, a token).
const maxKubeconfigFile = 1 << 20

// InlineFiles is a copy of cfg whose CA, client certificate, key and
// token files are read into their data fields, each bounded and never
// from a FIFO or a device (a kubeconfig of someone else's may name
// /dev/zero): client-go would read them whole, and block on a FIFO.
func InlineFiles(cfg *rest.Config) (*rest.Config, error) {
	out := rest.CopyConfig(cfg)
	for _, f := range []struct {
		what string
		path *string
		data *[]byte
	}{
		{"the kubeconfig's certificate-authority", &out.CAFile, &out.CAData},
		{"the kubeconfig's client-certificate", &out.CertFile, &out.CertData},
		{"the kubeconfig's client-key", &out.KeyFile, &out.KeyData},
	} {
		if *f.path == "" {
			continue
		}
		if len(*f.data) == 0 {
			b, _, err := safefile.ReadRegular(f.what, *f.path, maxKubeconfigFile, safefile.ReadOptions{})
			if err != nil {
				return nil, err
			}
			*f.data = b
		}
		*f.path = ""
	}
	if out.BearerTokenFile != "" {
		b, _, err := safefile.ReadRegular(
			"the kubeconfig's tokenFile", out.BearerTokenFile, maxKubeconfigFile, safefile.ReadOptions{})
		if err != nil {
			return nil, err
		}
		out.BearerToken, out.BearerTokenFile = strings.TrimSpace(string(b)), ""
	}
	return out, nil
}

// ExecCluster is spec.cluster as client-go builds it from cfg for an exec
// plugin (rest.ConfigToExecCluster), in execcred's form.
func ExecCluster(cfg *rest.Config) (*execcred.Cluster, error) {
	probe := rest.CopyConfig(cfg)
	if probe.ExecProvider == nil {
		return nil, fmt.Errorf("the kubeconfig user of %s runs no exec plugin", cfg.Host)
	}
	c, err := rest.ConfigToExecCluster(probe)
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig cluster of %s: %w", cfg.Host, err)
	}
	ec := &execcred.Cluster{Server: c.Server, TLSServerName: c.TLSServerName,
		InsecureSkipTLSVerify:    c.InsecureSkipTLSVerify,
		CertificateAuthorityData: c.CertificateAuthorityData, ProxyURL: c.ProxyURL,
		DisableCompression: c.DisableCompression}
	if u, ok := c.Config.(*runtime.Unknown); ok && u != nil {
		ec.Config = u.Raw
	}
	return ec, nil
}
