package login

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/httpguard"
)

// DefaultHTTPTimeout bounds each request to the provider.
const DefaultHTTPTimeout = 30 * time.Second

// HTTPOptions configure the client of the identity provider.
type HTTPOptions struct {
	// CAFiles and CAData (base64 PEM) are added to the system roots.
	CAFiles  []string
	CAData   string
	Insecure bool
	Timeout  time.Duration
	// Headers go with every request to HeaderHost (--oidc-request-header:
	// the provider's host), never to another.
	Headers    map[string]string
	HeaderHost string
}

// NewHTTPClient returns the client of the identity provider: TLS 1.2 and
// up, the given CAs on top of the system's, a timeout per request, and no
// redirect to another host, nor of a POST at all (a token endpoint that
// redirects would have the request body, secrets included, sent on: RFC
// 6749 expects none, and the 3xx is reported as the answer).
func NewHTTPClient(o HTTPOptions) (*http.Client, error) {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(o.CAFiles) > 0 || o.CAData != "" {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		for _, caFile := range o.CAFiles {
			pem, err := os.ReadFile(caFile)
			if err != nil {
				return nil, fmt.Errorf("reading --oidc-certificate-authority: %w", err)
			}
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--oidc-certificate-authority %s holds no PEM certificate", caFile)
			}
		}
		if o.CAData != "" {
			pem, err := base64.StdEncoding.DecodeString(strings.TrimSpace(o.CAData))
			if err != nil {
				return nil, fmt.Errorf("--certificate-authority-data is not base64: %w", err)
			}
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--certificate-authority-data holds no PEM certificate")
			}
		}
		tlsConfig.RootCAs = pool
	}
	if o.Insecure {
		tlsConfig.InsecureSkipVerify = true //nolint:gosec // the user asked for it with --insecure-skip-tls-verify
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConfig
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultHTTPTimeout
	}
	var rt http.RoundTripper = transport
	if len(o.Headers) > 0 {
		rt = headerTransport{headers: o.Headers, host: o.HeaderHost, next: transport}
	}
	rt = httpguard.Bounded(rt)
	return &http.Client{Transport: rt, Timeout: timeout, CheckRedirect: sameHostGETOnly}, nil
}

// sameHostGETOnly follows a redirect only for a GET to the same host and
// scheme (discovery moved within the provider; never from https to
// http); anything else returns the 3xx.
func sameHostGETOnly(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 || req.Method != http.MethodGet || req.URL.Host != via[0].URL.Host ||
		req.URL.Scheme != via[0].URL.Scheme {
		return http.ErrUseLastResponse
	}
	return nil
}

// headerTransport adds --oidc-request-header's headers to the requests to
// the provider's host.
type headerTransport struct {
	headers map[string]string
	host    string
	next    http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host != h.host {
		return h.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.next.RoundTrip(r)
}
