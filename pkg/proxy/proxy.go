// Package proxy is an impersonating proxy for API servers that cannot be
// configured with OIDC: it verifies the caller's ID token (signature via
// JWKS, iss, aud, exp), maps its claims to a Kubernetes identity with the
// same engine as "claims", and forwards the request with its own credential
// plus Impersonate-User / -Group / -Uid headers, so that RBAC applies to the
// caller (https://kubernetes.io/docs/reference/access-authn-authz/authentication/#user-impersonation).
package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/inspect"
)

// Verifier checks a raw token and returns its claims.
type Verifier interface {
	Verify(ctx context.Context, raw string) (map[string]any, error)
}

// Mapper turns verified claims into an identity (Problems reject it).
type Mapper func(ctx context.Context, t *inspect.Token) inspect.Identity

// Handler is the proxy.
type Handler struct {
	Upstream  *url.URL
	Transport http.RoundTripper
	// UpgradeTransport carries connection upgrades (SPDY, WebSocket); it
	// must speak HTTP/1.1, since HTTP/2 has no Upgrade. Nil: Transport.
	UpgradeTransport http.RoundTripper
	Verifier         Verifier
	Map              Mapper
	Audit            io.Writer
	Now              func() time.Time
	// CacheSize bounds the cache of verified tokens' identities (kept
	// until each token's exp): 0 means DefaultCacheSize, negative disables.
	CacheSize int

	proxy   *httputil.ReverseProxy
	once    sync.Once
	metrics metrics
	auditMu sync.Mutex
	cache   *identityCache
}

type metrics struct {
	mu             sync.Mutex
	requests       map[int]int
	verifyFailures int
	cacheHits      int
	latencySum     time.Duration
	latencyCount   int
}

func (h *Handler) init() {
	h.metrics.requests = map[int]int{}
	if h.Now == nil {
		h.Now = time.Now
	}
	switch {
	case h.CacheSize == 0:
		h.cache = newIdentityCache(DefaultCacheSize)
	case h.CacheSize > 0:
		h.cache = newIdentityCache(h.CacheSize)
	}
	h.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(h.Upstream)
			r.Out.Host = h.Upstream.Host
		},
		Transport: upgradeSplit{plain: h.Transport, upgrade: h.UpgradeTransport},
		// Watches and logs stream: flush every write.
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			status(w, http.StatusBadGateway, "ServiceUnavailable", "the impersonating proxy could not reach the API server: "+err.Error())
		},
	}
}

// upgradeSplit sends upgrade requests through their own transport.
type upgradeSplit struct{ plain, upgrade http.RoundTripper }

func (u upgradeSplit) RoundTrip(r *http.Request) (*http.Response, error) {
	rt := u.plain
	if u.upgrade != nil && r.Header.Get("Upgrade") != "" {
		rt = u.upgrade
	}
	if rt == nil {
		rt = http.DefaultTransport
	}
	return rt.RoundTrip(r)
}

// status writes a Kubernetes Status, as the API server would.
func status(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{},
		"status": "Failure", "message": msg, "reason": reason, "code": code})
}

type recorder struct {
	http.ResponseWriter
	code int
}

func (r *recorder) WriteHeader(c int) { r.code = c; r.ResponseWriter.WriteHeader(c) }
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection (upgrades).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.once.Do(h.init)
	switch r.URL.Path {
	case "/healthz", "/readyz", "/livez":
		_, _ = io.WriteString(w, "ok")
		return
	case "/metrics":
		h.writeMetrics(w)
		return
	}
	start := time.Now()
	rec := &recorder{ResponseWriter: w, code: http.StatusOK}
	id := h.serve(rec, r)
	elapsed := time.Since(start)
	h.metrics.mu.Lock()
	h.metrics.requests[rec.code]++
	h.metrics.latencySum += elapsed
	h.metrics.latencyCount++
	h.metrics.mu.Unlock()
	if h.Audit != nil {
		b, _ := json.Marshal(map[string]any{"time": time.Now().UTC().Format(time.RFC3339Nano), "user": id.Username, "groups": id.Groups,
			"verb": r.Method, "path": r.URL.Path, "code": rec.code, "latencyMs": elapsed.Milliseconds()})
		h.auditMu.Lock()
		_, _ = h.Audit.Write(append(b, '\n'))
		h.auditMu.Unlock()
	}
}

func (h *Handler) fail() {
	h.metrics.mu.Lock()
	h.metrics.verifyFailures++
	h.metrics.mu.Unlock()
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request) inspect.Identity {
	for name := range r.Header {
		if strings.HasPrefix(strings.ToLower(name), "impersonate-") {
			status(w, http.StatusForbidden, "Forbidden", "impersonation headers are not accepted through the impersonating proxy")
			return inspect.Identity{}
		}
	}
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || raw == "" {
		h.fail()
		status(w, http.StatusUnauthorized, "Unauthorized", "Unauthorized")
		return inspect.Identity{}
	}
	e, ok := h.cache.get(raw, h.Now())
	if ok {
		h.metrics.mu.Lock()
		h.metrics.cacheHits++
		h.metrics.mu.Unlock()
	} else {
		claims, err := h.Verifier.Verify(r.Context(), raw)
		if err != nil {
			h.fail()
			status(w, http.StatusUnauthorized, "Unauthorized", "Unauthorized")
			return inspect.Identity{}
		}
		tok := &inspect.Token{Claims: claims}
		e.id = h.Map(r.Context(), tok)
		if len(e.id.Problems) > 0 || e.id.Username == "" {
			h.fail()
			status(w, http.StatusUnauthorized, "Unauthorized", "Unauthorized")
			return inspect.Identity{}
		}
		e.uid = tok.String("sub")
		if exp, ok := tok.Expiry(); ok {
			e.expiry = exp
			h.cache.put(raw, e, h.Now())
		}
	}
	id := e.id
	out := r.Clone(r.Context())
	out.Header.Del("Authorization")
	out.Header.Set("Impersonate-User", id.Username)
	for _, g := range id.Groups {
		out.Header.Add("Impersonate-Group", g)
	}
	if e.uid != "" {
		out.Header.Set("Impersonate-Uid", e.uid)
	}
	h.proxy.ServeHTTP(w, out)
	return id
}

func (h *Handler) writeMetrics(w http.ResponseWriter) {
	h.metrics.mu.Lock()
	defer h.metrics.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintln(w, "# HELP kubectl_impersonate_proxy_requests_total Requests by HTTP status code.")
	fmt.Fprintln(w, "# TYPE kubectl_impersonate_proxy_requests_total counter")
	codes := make([]int, 0, len(h.metrics.requests))
	for c := range h.metrics.requests {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	for _, c := range codes {
		fmt.Fprintf(w, "kubectl_impersonate_proxy_requests_total{code=\"%d\"} %d\n", c, h.metrics.requests[c])
	}
	fmt.Fprintln(w, "# HELP kubectl_impersonate_proxy_verification_failures_total Requests refused for their token.")
	fmt.Fprintln(w, "# TYPE kubectl_impersonate_proxy_verification_failures_total counter")
	fmt.Fprintf(w, "kubectl_impersonate_proxy_verification_failures_total %d\n", h.metrics.verifyFailures)
	fmt.Fprintln(w, "# HELP kubectl_impersonate_proxy_token_cache_hits_total Requests whose token was verified before (identity from the cache).")
	fmt.Fprintln(w, "# TYPE kubectl_impersonate_proxy_token_cache_hits_total counter")
	fmt.Fprintf(w, "kubectl_impersonate_proxy_token_cache_hits_total %d\n", h.metrics.cacheHits)
	fmt.Fprintln(w, "# HELP kubectl_impersonate_proxy_request_duration_seconds Time to serve a request, upstream included.")
	fmt.Fprintln(w, "# TYPE kubectl_impersonate_proxy_request_duration_seconds summary")
	fmt.Fprintf(w, "kubectl_impersonate_proxy_request_duration_seconds_sum %f\n", h.metrics.latencySum.Seconds())
	fmt.Fprintf(w, "kubectl_impersonate_proxy_request_duration_seconds_count %d\n", h.metrics.latencyCount)
}
