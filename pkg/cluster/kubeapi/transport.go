package kubeapi

import (
	"fmt"
	"net/http"

	"k8s.io/client-go/rest"
)

// UpstreamTransports are client-go's transports to cfg's server, with its
// TLS and credentials (a token, a client certificate, an exec plugin): one
// over HTTP/2 where the server offers it, and one over HTTP/1.1 for
// upgrades (exec, attach, port-forward: SPDY cannot go over HTTP/2). The
// impersonating proxy and record's endpoint forward through them.
func UpstreamTransports(cfg *rest.Config) (plain, upgrade http.RoundTripper, err error) {
	if plain, err = rest.TransportFor(cfg); err != nil {
		return nil, nil, fmt.Errorf("building the transport to the cluster: %w", err)
	}
	h1 := rest.CopyConfig(cfg)
	h1.TLSClientConfig.NextProtos = []string{"http/1.1"}
	if upgrade, err = rest.TransportFor(h1); err != nil {
		return nil, nil, fmt.Errorf("building the transport to the cluster for upgrades: %w", err)
	}
	return plain, upgrade, nil
}
