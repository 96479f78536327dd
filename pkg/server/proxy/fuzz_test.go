package proxy

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testissuer"
)

// FuzzProxyRequest: whatever the caller's method, path, header and value,
// a request either reaches nothing upstream, or reaches it with exactly
// alice's identity, under the upstream's prefix, without the caller's
// credential or X-Remote-* headers.
func FuzzProxyRequest(f *testing.F) {
	for _, s := range [][4]string{
		{"GET", "/api/v1/pods", "Accept", "application/json"},
		{"GET", "/api/v1/../../secrets", "X", "y"},
		{"GET", "/api/v1/%2e%2e/x", "Connection", "Impersonate-User"},
		{"POST", "/apis/x/v1/y", "Impersonate-Group", "system:masters"},
		{"GET", "/api", "X-Remote-User", "admin"},
		{"GET", "/api;/..;/x", "Connection", "keep-alive, authorization"},
		{"CONNECT", "/", "Upgrade", "SPDY/3.1"},
		{"GET", "/api", "iMpErSoNaTe-ExTrA-scopes", "a"},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	p := newTestProxy(f, structuredConfig, false)
	alice := p.mint(f, aliceClaims, testissuer.Valid)
	f.Fuzz(func(t *testing.T, method, path, name, value string) {
		req, err := http.NewRequest(method, "http://proxy"+path, nil)
		if err != nil || !strings.HasPrefix(path, "/") {
			return
		}
		req.Header.Set("Authorization", "Bearer "+alice)
		req.Header[name] = []string{value} // as written: no canonicalisation
		p.upstream.take()
		p.handler.ServeHTTP(httptest.NewRecorder(), req)
		for _, up := range p.upstream.take() {
			if got := up.Header.Values("Impersonate-User"); len(got) != 1 || got[0] != "alice@example.com" {
				t.Fatalf("%s %q with %q: %q: forwarded as %v", method, path, name, value, got)
			}
			if g := up.Header.Values("Impersonate-Group"); len(g) != 1 || g[0] != "dev" {
				t.Fatalf("%s %q with %q: %q: groups %v", method, path, name, value, g)
			}
			if up.Header.Get("Authorization") != "" {
				t.Fatalf("the caller's Authorization went upstream")
			}
			for h := range up.Header {
				if strings.HasPrefix(strings.ToLower(h), "x-remote-") {
					t.Fatalf("%s went upstream", h)
				}
			}
			if !strings.HasPrefix(up.URL.Path, "/clusters/c-1/") && up.URL.Path != "/clusters/c-1" {
				t.Fatalf("%q left the upstream's prefix: %q", path, up.URL.Path)
			}
		}
	})
}
