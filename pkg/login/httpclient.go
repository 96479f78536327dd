package login

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"time"
)

// DefaultHTTPTimeout bounds one request to the identity provider.
const DefaultHTTPTimeout = 30 * time.Second

// NewHTTPClient returns the client for the identity provider: the system
// roots plus caFile when given, TLS verification on unless insecure, proxies
// from the environment.
func NewHTTPClient(caFile string, insecure bool, timeout time.Duration) (*http.Client, error) {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("reading --oidc-certificate-authority: %w", err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--oidc-certificate-authority %s holds no PEM certificate", caFile)
		}
		tlsConfig.RootCAs = pool
	}
	if insecure {
		tlsConfig.InsecureSkipVerify = true //nolint:gosec // the user asked for it with --insecure-skip-tls-verify
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConfig
	if timeout <= 0 {
		timeout = DefaultHTTPTimeout
	}
	return &http.Client{Transport: transport, Timeout: timeout}, nil
}
