package session

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credspec"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/execcred"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/tokencache"
)

// Gate is the one way a cached token leaves the cache for a server in the
// full binary (test/repo's TestOneTokenGate keeps it so): cfg is the REST
// configuration a client of the plugin's own (completion, status --check,
// whoami, groups, claims) would use, after every kubectl flag; Gate judges
// the cluster it names exactly as get-token judges the cluster kubectl
// names (credspec.Admit: https, the allowed servers and what the cluster
// entry does with the token, the cluster's own audience), reads the token
// get-token would hand out now without renewing it, and returns a copy of
// cfg bound to that cluster and carrying that token alone: no exec entry
// to run, no other credential, the TLS and proxy settings that were
// judged. store nil opens the settings' own cache.
func (s *Session) Gate(ctx context.Context, cfg *rest.Config, store tokencache.Store) (*rest.Config, *TokenSource, error) {
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
	// This client sends the token itself: its server is known either way.
	if err := credspec.CheckScheme(cfg.Host); err != nil {
		return nil, nil, err
	}
	a := *s.unbound
	if err := a.Admit(cluster); err != nil {
		return nil, nil, err
	}
	if store == nil {
		var err error
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
	ec := &execcred.Cluster{Server: c.Server, TLSServerName: c.TLSServerName, InsecureSkipTLSVerify: c.InsecureSkipTLSVerify,
		CertificateAuthorityData: c.CertificateAuthorityData, ProxyURL: c.ProxyURL, DisableCompression: c.DisableCompression}
	if u, ok := c.Config.(*runtime.Unknown); ok && u != nil {
		ec.Config = u.Raw
	}
	return ec, nil
}
