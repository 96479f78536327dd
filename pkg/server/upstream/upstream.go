// Package upstream is the impersonating proxy's and record's side toward
// kube-apiserver.
//
//   - HeaderTimeout bounds the wait for response headers, never a stream.
//   - UpgradeSplit sends upgrades over HTTP/1.1, the rest as configured.
//   - LongRunning is kube-apiserver's own test of watches and streams.
//   - StripWebSocketToken keeps a caller's WebSocket token from going on.
//   - ReadyCheck is the proxy's /readyz.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/attributes"
)

// HeaderTimeout bounds the wait for the API server's response headers;
// the body (a watch, logs -f, an upgraded stream) is not bounded.
func HeaderTimeout(next http.RoundTripper, d time.Duration) http.RoundTripper {
	return headerTimeout{next: next, d: d}
}

type headerTimeout struct {
	next http.RoundTripper
	d    time.Duration
}

var errUpstreamTimeout = errors.New("no response headers from the API server in time (--upstream-timeout)")

func (t headerTimeout) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(r.Context())
	timer := time.AfterFunc(t.d, func() { cancel(errUpstreamTimeout) })
	resp, err := t.next.RoundTrip(r.WithContext(ctx))
	if !timer.Stop() {
		if err == nil {
			resp.Body.Close()
		}
		cancel(nil)
		return nil, fmt.Errorf("%w: %s", errUpstreamTimeout, t.d)
	}
	if err != nil {
		cancel(nil)
		return nil, err
	}
	// The request's context ends with the caller's request; the body
	// closes it too, so that nothing is kept past the response.
	resp.Body = cancelOnClose{ReadCloser: resp.Body, cancel: func() { cancel(nil) }}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel func()
}

func (c cancelOnClose) Close() error { err := c.ReadCloser.Close(); c.cancel(); return err }

// Write lets a 101 Switching Protocols body (the upgraded connection) be
// written to, as httputil.ReverseProxy requires.
func (c cancelOnClose) Write(p []byte) (int, error) {
	if w, ok := c.ReadCloser.(io.Writer); ok {
		return w.Write(p)
	}
	return 0, errors.New("the upstream body is not writable")
}

// CloseWrite passes a half-close on to an upgraded connection.
func (c cancelOnClose) CloseWrite() error {
	if cw, ok := c.ReadCloser.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// ReadyCheck is ready when the API server answers its /readyz with the
// proxy's credential and every issuer's keys are loaded (health).
// The answer is reused for reuse: probes are frequent and unauthenticated,
// and each check costs an upstream request.
func ReadyCheck(upstream *url.URL, rt http.RoundTripper, health func() error,
	reuse time.Duration) func(ctx context.Context) error {
	readyz := upstream.JoinPath("/readyz").String()
	var mu sync.Mutex
	var last time.Time
	var lastErr error
	return func(ctx context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last) < reuse {
			return lastErr
		}
		last, lastErr = time.Now(), check(ctx, readyz, rt, health)
		return lastErr
	}
}

func check(ctx context.Context, readyz string, rt http.RoundTripper, health func() error) error {
	if err := health(); err != nil {
		return fmt.Errorf("issuer: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, readyz, nil)
	if err != nil {
		return err
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return errors.New("upstream unavailable")
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("upstream /readyz answered %d", resp.StatusCode)
	}
	return nil
}

// UpgradeSplit sends upgrade requests (exec, attach, port-forward) through
// Upgrade, an HTTP/1.1 transport (SPDY cannot go over HTTP/2), and the
// others through Plain: the proxy's and record's endpoint's upstream.
type UpgradeSplit struct{ Plain, Upgrade http.RoundTripper }

func (u UpgradeSplit) RoundTrip(r *http.Request) (*http.Response, error) {
	rt := u.Plain
	if u.Upgrade != nil && r.Header.Get("Upgrade") != "" {
		rt = u.Upgrade
	}
	if rt == nil {
		rt = http.DefaultTransport
	}
	return rt.RoundTrip(r)
}

// LongRunning are the requests kube-apiserver leaves out of its in-flight
// limit and its request timeout, decided as it decides them
// (BasicLongRunningRequestCheck: the verbs watch and proxy, the
// subresources attach, exec, proxy, log and portforward), from the request
// as k8s.io/apiserver parses it: a query parameter or a header alone does
// not make a request long-running.
func LongRunning(r *http.Request) bool {
	ri, err := attributes.Resolver.NewRequestInfo(r)
	if err != nil || !ri.IsResourceRequest {
		return false
	}
	switch {
	case ri.Verb == "watch", ri.Verb == "proxy":
		return true
	}
	switch ri.Subresource {
	case "attach", "exec", "proxy", "log", "portforward":
		return true
	}
	return false
}

// webSocketBearerPrefix is the subprotocol that carries a WebSocket
// client's bearer token (k8s.io/apiserver's request/websocket).
const webSocketBearerPrefix = "base64url.bearer.authorization.k8s.io."

// HasWebSocketToken tells whether a Sec-WebSocket-Protocol value carries a
// bearer token.
func HasWebSocketToken(v string) bool { return strings.Contains(v, webSocketBearerPrefix) }

// StripWebSocketToken removes the bearer subprotocols from
// Sec-WebSocket-Protocol: a caller's token never goes upstream, whichever
// credential authenticated it.
func StripWebSocketToken(h http.Header) {
	values := h.Values("Sec-WebSocket-Protocol")
	if len(values) == 0 {
		return
	}
	var keep []string
	for _, v := range values {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" && !strings.HasPrefix(p, webSocketBearerPrefix) {
				keep = append(keep, p)
			}
		}
	}
	h.Del("Sec-WebSocket-Protocol")
	if len(keep) > 0 {
		h.Set("Sec-WebSocket-Protocol", strings.Join(keep, ", "))
	}
}
