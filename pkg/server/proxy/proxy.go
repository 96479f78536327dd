// Package proxy is an impersonating proxy for API servers that cannot be
// configured with OIDC. It authenticates each caller's bearer token with
// kube-apiserver's own JWT authenticator (pkg/server/authn) and forwards the
// request with the proxy's own credential plus Impersonate-User, -Group,
// -Uid and -Extra-* headers, so that RBAC applies to the caller
// (https://kubernetes.io/docs/reference/access-authn-authz/authentication/#user-impersonation).
//
// The proxy's credential is usually more powerful than any caller, so every
// path by which a caller could make a request run as the proxy itself is
// closed, and tested as an attack:
//   - the impersonation headers are set by the last round tripper, after
//     httputil.ReverseProxy has removed hop-by-hop headers (a caller who names
//     Impersonate-User or Authorization in its Connection header would
//     otherwise have them removed after they were set); such requests are
//     refused outright;
//   - callers' own Impersonate-* headers are refused (or, with
//     CallerImpersonation, honoured only once kube-apiserver says the
//     authenticated caller may impersonate each of them) and X-Remote-*
//     headers (request-header authentication) are always removed;
//   - identities that kube-apiserver would never produce from a token, or
//     that HTTP/1.1 would alter in transit (leading or trailing white space,
//     control characters), and system: identities, are refused;
//   - paths with dot segments, which a prefixed upstream would resolve
//     outside its prefix, are refused.
//
// The request path is here; who a request goes upstream as is
// pkg/server/identity's, the way upstream (timeouts, upgrades, streams)
// pkg/server/upstream's, and the audit line pkg/cluster/auditlog's ProxyLine.
package proxy

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/apiserver/pkg/authentication/request/websocket"
	tokencache "k8s.io/apiserver/pkg/authentication/token/cache"
	"k8s.io/apiserver/pkg/authentication/user"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/transport"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/auditlog"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/attributes"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/identity"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/kubecode"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/sudo"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/upstream"
)

// Authenticator is kube-apiserver's token authenticator (pkg/server/authn's):
// the proxy reads the token from the request with k8s.io/apiserver's
// bearer-token and WebSocket-protocol request authenticators, and caches
// identities with its token cache, as kube-apiserver does.
type Authenticator = authenticator.Token

// Handler is the proxy.
type Handler struct {
	Upstream *url.URL
	// Transport carries requests to the API server with the proxy's own
	// credential.
	Transport http.RoundTripper
	// UpgradeTransport carries connection upgrades (SPDY, WebSocket); it
	// must speak HTTP/1.1, since HTTP/2 has no Upgrade. Nil: Transport.
	UpgradeTransport http.RoundTripper
	Authenticator    Authenticator
	// AllowSystemIdentities lets tokens map to system: users and groups.
	AllowSystemIdentities bool
	// Ready reports whether the proxy can serve (upstream and issuers);
	// nil means always.
	Ready func(ctx context.Context) error
	// AuthenticatorReady reports whether every issuer's keys are loaded
	// (pkg/server/authn's HealthCheck); nil means always. A token refused while
	// they are not gets 503 with Retry-After, not 401: the token may be
	// good, and the client should try again, not log in again.
	AuthenticatorReady func() error
	Audit              io.Writer
	Metrics            *Metrics
	// CacheTTL is how long an authenticated token's identity is reused
	// (k8s.io/apiserver's token cache, as kube-apiserver's 10 s): 0 means
	// DefaultCacheTTL, negative disables the cache.
	CacheTTL time.Duration
	// MaxInFlight bounds the requests served at once, long-running ones
	// (watches, upgrades) aside, as kube-apiserver's
	// --max-requests-inflight: more get 429. 0 means DefaultMaxInFlight,
	// negative no limit.
	MaxInFlight int
	// Log receives what the proxy withholds from callers (why it is not
	// ready); nil: dropped.
	Log func(string)
	// CallerImpersonation, when set (--allow-caller-impersonation), honours
	// a caller's own Impersonate-* headers (kubectl --as) as kube-apiserver
	// does: its impersonation filter (k8s.io/apiserver's) asks
	// CallerImpersonation its questions about the authenticated caller,
	// and the request then goes as the identity it allows, with the caller
	// under identity.OriginalUserExtra. Nil: such headers are refused (403).
	CallerImpersonation identity.Authorizer
	// Sudo, when set (--sudo), serves time-boxed elevation: a caller who
	// impersonates itself with the extra sudo.GrantExtra (NAMESPACE/NAME)
	// goes upstream with that live grant's group and extras, until it ends
	// (pkg/server/sudo). Nil: such requests are refused (403).
	Sudo Elevator
	// ConstrainedImpersonation runs kube-apiserver's constrained
	// impersonation filter (1.36+: impersonate:user-info and the other
	// modes, then the classic verb) rather than the classic one alone.
	ConstrainedImpersonation bool

	proxy *httputil.ReverseProxy
	// impersonation is the filter in front of serveImpersonated.
	impersonation http.Handler
	once          sync.Once
	inFlight      chan struct{}
	auditMu       sync.Mutex
	// requests authenticates a request: its bearer token, or a WebSocket
	// client's (the base64url.bearer.authorization.k8s.io. subprotocol).
	requests authenticator.Request
	// verifications counts the tokens the authenticator itself checked;
	// of them, verified those it accepted. authentications counts the
	// requests authenticated: less verified, the cache's hits.
	verifications, verified, authentications atomic.Int64
}

// Elevator decides an elevated request: pkg/server/sudo's Store.
type Elevator interface {
	Elevate(caller user.Info, ns, grant string) (*sudo.Elevation, error)
}

// identityKey carries the authenticated identity from ServeHTTP to the
// last round tripper.
type identityKey struct{}

func (h *Handler) init() {
	if h.Metrics == nil {
		h.Metrics = NewMetrics()
	}
	switch {
	case h.MaxInFlight == 0:
		h.inFlight = make(chan struct{}, DefaultMaxInFlight)
	case h.MaxInFlight > 0:
		h.inFlight = make(chan struct{}, h.MaxInFlight)
	}
	var tokens authenticator.Token = authenticator.TokenFunc(func(ctx context.Context,
		token string) (*authenticator.Response, bool, error) {
		h.verifications.Add(1)
		resp, ok, err := h.Authenticator.AuthenticateToken(ctx, token)
		if ok {
			h.verified.Add(1)
		}
		return resp, ok, err
	})
	if ttl := cmp.Or(h.CacheTTL, DefaultCacheTTL); ttl > 0 {
		// kube-apiserver's: keyed by an HMAC of the token, failures not
		// cached, concurrent lookups of one token made once.
		tokens = tokencache.New(tokens, false, ttl, 0)
	}
	h.requests = union.New(bearertoken.New(tokens), websocket.NewProtocolAuthenticator(tokens))
	if h.CallerImpersonation != nil {
		h.impersonation = identity.Filter(http.HandlerFunc(h.serveImpersonated), h.CallerImpersonation,
			h.ConstrainedImpersonation)
	}
	h.Metrics.cacheHits(func() float64 { return float64(h.authentications.Load() - h.verified.Load()) })
	h.proxy = &httputil.ReverseProxy{
		// Rewrite runs after the hop-by-hop headers (and those the caller
		// named in Connection) were removed from the outbound request.
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(h.Upstream)
			r.Out.Host = h.Upstream.Host
			stripIdentityHeaders(r.Out.Header)
			upstream.StripWebSocketToken(r.Out.Header)
			// The caller's address, as kube-apiserver's audit reads it
			// (sourceIPs): X-Forwarded-For set from the connection, and no
			// X-Real-Ip of the caller's choosing.
			r.Out.Header.Del("X-Real-Ip")
			r.SetXForwarded()
		},
		Transport: impersonate{upstream.UpgradeSplit{Plain: h.Transport, Upgrade: h.UpgradeTransport}},
		// Watches and logs stream: flush every write.
		FlushInterval: -1,
		ErrorLog:      h.errorLog(),
		// The audit line says whether the cluster answered at all.
		ModifyResponse: func(resp *http.Response) error {
			if l, ok := resp.Request.Context().Value(logKey{}).(*requestLog); ok {
				l.answered = true
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			setReason(r, "upstream unavailable: "+err.Error())
			Status(w, textRefusal(r), http.StatusBadGateway, metav1.StatusReasonServiceUnavailable,
				"the impersonating proxy could not reach the API server: upstream unavailable")
		},
	}
}

// errorLog is net/http's logger for the proxy's servers and upstream: its
// lines (a TLS handshake's error, a caller's address) go to Log, one
// escaped line each, or nowhere.
func (h *Handler) errorLog() *log.Logger {
	if h.Log == nil {
		return log.New(io.Discard, "", 0)
	}
	return log.New(logFunc(h.Log), "", 0)
}

type logFunc func(string)

func (f logFunc) Write(p []byte) (int, error) {
	f(logging.OneLine(string(p), 0))
	return len(p), nil
}

// stripIdentityHeaders removes every header that could carry an identity
// upstream: the caller's credential, impersonation and request-header
// authentication.
func stripIdentityHeaders(h http.Header) {
	for name := range h {
		if attributes.IdentityHeader(name) {
			delete(h, name)
		}
	}
}

// DefaultMaxInFlight is kube-apiserver's default --max-requests-inflight.
const DefaultMaxInFlight = kubecode.DefaultMaxInFlight

// refusalGrace is how long past RequestTimeout a refusal may still be
// written.
const refusalGrace = 5 * time.Second

// RequestTimeout bounds a request that is not long-running, as
// kube-apiserver's --request-timeout: it gives back its in-flight slot by
// then, whatever the caller or the upstream does.
var RequestTimeout = 60 * time.Second

// impersonate is the last round tripper before the proxy's credential:
// it sets the caller's identity with client-go's impersonating round
// tripper, after which nothing removes headers. A request without an
// identity is never sent.
type impersonate struct{ next http.RoundTripper }

func (i impersonate) RoundTrip(r *http.Request) (*http.Response, error) {
	u, ok := r.Context().Value(identityKey{}).(user.Info)
	if !ok || u.GetName() == "" {
		return nil, errors.New("refusing to send a request without the caller's identity")
	}
	return transport.NewImpersonatingRoundTripper(transport.ImpersonationConfig{
		UserName: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra(),
	}, i.next).RoundTrip(r)
}

// Status writes a Kubernetes Status, as the API server would, or its
// message alone as text where kubectl decodes no Status (textRefusal): the
// proxy's and record's endpoint's refusals.
func Status(w http.ResponseWriter, text bool, code int, reason metav1.StatusReason, msg string) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if text {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, msg+"\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusFailure, Message: msg, Reason: reason, Code: int32(code)})
}

// textRefusal: client-go reads discovery (/api, /apis), /version and the
// OpenAPI documents as raw bytes and decodes no Status from an error: from
// a JSON body kubectl shows "Forbidden: unknown", from a text one the
// message. The proxy's refusals there are the Status's message as text
// (kube-apiserver's own Status would read "unknown" in kubectl).
func textRefusal(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	p := r.URL.Path
	return p == "/api" || p == "/apis" || p == "/version" || strings.HasPrefix(p, "/openapi/")
}

// reasons are the Status reasons of the proxy's refusals, kube-apiserver's.
var reasons = map[int]metav1.StatusReason{
	http.StatusBadRequest: metav1.StatusReasonBadRequest, http.StatusUnauthorized: metav1.StatusReasonUnauthorized,
	http.StatusForbidden:          metav1.StatusReasonForbidden,
	http.StatusMethodNotAllowed:   metav1.StatusReasonMethodNotAllowed,
	http.StatusTooManyRequests:    metav1.StatusReasonTooManyRequests,
	http.StatusServiceUnavailable: metav1.StatusReasonServiceUnavailable,
}

// requestLog is what the audit line says of one request.
type requestLog struct {
	user user.Info
	// original is the caller who impersonated user, if one did.
	original user.Info
	reason   string
	// impersonated: the impersonation filter let the request through;
	// asked, what the caller's headers asked; acceptEncoding, the caller's,
	// kept from the filter.
	impersonated bool
	asked        *identity.Asked
	// answered: the cluster's answer came (its code is the line's).
	answered       bool
	acceptEncoding []string
	// text: refusals are written as text (textRefusal).
	text bool
	// elevation is the grant the request is served under, if any; grant
	// the one it asked for (NAMESPACE/NAME).
	elevation *sudo.Elevation
	grant     string
	// release gives back the request's in-flight slot.
	release func()
}

type logKey struct{}

func setReason(r *http.Request, reason string) {
	if l, ok := r.Context().Value(logKey{}).(*requestLog); ok {
		l.reason = reason
	}
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

// Unwrap lets http.ResponseController reach the connection.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Hijack records an upgrade (httputil.ReverseProxy writes the 101 on the
// hijacked connection itself, not through WriteHeader).
func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(r.ResponseWriter).Hijack()
	if err == nil {
		r.code = http.StatusSwitchingProtocols
	}
	return c, rw, err
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.once.Do(h.init)
	switch r.URL.Path {
	case "/healthz", "/livez":
		_, _ = io.WriteString(w, "ok")
		return
	case "/readyz":
		h.serveReady(w, r)
		return
	}
	start := time.Now()
	rec := &recorder{ResponseWriter: w, code: http.StatusOK}
	l := &requestLog{}
	r = r.WithContext(context.WithValue(r.Context(), logKey{}, l))
	l.release = func() {}
	if h.inFlight != nil {
		select {
		case h.inFlight <- struct{}{}:
			// Every request holds a slot until it is authenticated; a
			// long-running one then gives it back (serve). Released by
			// defer in any case: ReverseProxy panics (http.ErrAbortHandler)
			// when the caller goes away mid-body.
			var once sync.Once
			l.release = func() { once.Do(func() { <-h.inFlight }) }
			defer l.release()
		default:
			rec.Header().Set("Retry-After", "1")
			h.refuse(rec, l, http.StatusTooManyRequests, "overload", "too many requests in flight",
				"too many requests, please try again later")
		}
	}
	if rec.code != http.StatusTooManyRequests {
		h.serve(rec, r, l)
	}
	elapsed := time.Since(start)
	h.Metrics.observe(rec.code, elapsed)
	if h.Audit != nil {
		line := auditlog.ProxyLine{Time: time.Now().UTC().Format(time.RFC3339Nano), Remote: r.RemoteAddr,
			Method: r.Method, Path: r.URL.Path, Code: rec.code, LatencyMs: elapsed.Milliseconds(),
			Answered: l.answered, Reason: l.reason}
		if l.user != nil {
			line.User, line.Groups, line.UID = l.user.GetName(), l.user.GetGroups(), l.user.GetUID()
			// What the cluster's authorizer is asked for it, as the user:
			// least-privilege --from-audit reads it.
			checks := attributes.Of(r)
			line.Request = &checks[len(checks)-1]
		}
		if l.original != nil {
			line.OriginalUser = l.original.GetName()
		}
		if l.grant != "" {
			line.Grant = l.grant
		}
		b, _ := json.Marshal(line)
		b = logging.EscapeJSON(b) // a path or a claim may hold what a terminal must not get
		h.auditMu.Lock()
		_, _ = h.Audit.Write(append(b, '\n'))
		h.auditMu.Unlock()
	}
}

func (h *Handler) serveReady(w http.ResponseWriter, r *http.Request) {
	if h.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		if err := h.Ready(ctx); err != nil {
			// The reason (the issuer's URL, network errors) is for the
			// operator's log, not for anyone who can reach /readyz: as
			// kube-apiserver, which answers "readyz check failed".
			if h.Log != nil {
				h.Log("not ready: " + logging.OneLine(err.Error(), 0))
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "readyz check failed\n")
			return
		}
	}
	_, _ = io.WriteString(w, "ok")
}

// refuse answers a request the proxy will not forward.
func (h *Handler) refuse(w http.ResponseWriter, l *requestLog, code int, failure, reason, msg string) {
	l.reason = reason
	if failure != "" {
		h.Metrics.refused(failure)
	}
	Status(w, l.text, code, cmp.Or(reasons[code], metav1.StatusReasonUnknown), msg)
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request, l *requestLog) {
	l.text = textRefusal(r)
	if r.Method == http.MethodConnect || r.Method == http.MethodTrace {
		// CONNECT would tunnel through the proxy (and loses the
		// upstream's path prefix); the Kubernetes API uses neither.
		h.refuse(w, l, http.StatusMethodNotAllowed, "request", "method "+r.Method,
			"the method "+r.Method+" is not served by the impersonating proxy")
		return
	}
	if n := attributes.ConnectionNamesIdentity(r.Header); n != "" {
		h.refuse(w, l, http.StatusForbidden, "request", "Connection names "+n,
			fmt.Sprintf("the Connection header may not name %q through the impersonating proxy", n))
		return
	}
	var asked *identity.Asked
	var askedErr error // refused once the caller is authenticated (401 first)
	if h.CallerImpersonation == nil && h.Sudo == nil {
		for name := range r.Header {
			if n := attributes.NormalHeader(name); strings.HasPrefix(n, "impersonate-") {
				msg := "impersonation headers are not accepted through the impersonating proxy"
				if asksForGrant(r.Header) {
					msg = "this impersonating proxy does not serve sudo grants (kubectl-impersonate proxy --sudo)"
				}
				h.refuse(w, l, http.StatusForbidden, "request", "caller sent "+name, msg)
				return
			}
		}
	} else {
		asked, askedErr = identity.ReadHeaders(r.Header)
	}
	if attributes.HasDotSegment(r.URL) {
		h.refuse(w, l, http.StatusBadRequest, "request", "dot segment in the path",
			"the path may not contain dot segments (. or ..)")
		return
	}
	if !hasCredential(r) {
		h.refuse(w, l, http.StatusUnauthorized, "no_token", "no bearer token", "Unauthorized")
		return
	}
	u := h.authenticate(w, r, l)
	if u == nil {
		return
	}
	l.user = u
	if err := h.forwardable(u); err != nil {
		h.refuse(w, l, http.StatusForbidden, "identity", err.Error(),
			"the token's identity cannot be impersonated through this proxy: "+err.Error())
		return
	}
	if askedErr != nil {
		h.refuse(w, l, http.StatusForbidden, "request", askedErr.Error(),
			"impersonation refused: "+logging.OneLine(askedErr.Error(), 0))
		return
	}
	if asked != nil {
		h.serveAsked(w, r, l, u, asked)
		return
	}
	h.forward(w, r, l, u)
}

// serveAsked serves a request whose caller u impersonates: a sudo grant
// (sudo.Asked) is elevate's, anything else kube-apiserver's impersonation
// filter's (CallerImpersonation), or refused.
func (h *Handler) serveAsked(
	w http.ResponseWriter, r *http.Request, l *requestLog, u user.Info, asked *identity.Asked,
) {
	ns, grant, err := sudo.Asked(asked.Info(), u)
	switch {
	case err != nil:
		h.refuse(w, l, http.StatusForbidden, "sudo", err.Error(), logging.OneLine(err.Error(), 0))
		return
	case grant != "" && h.Sudo == nil:
		h.refuse(w, l, http.StatusForbidden, "sudo", "sudo not served",
			"this impersonating proxy does not serve sudo grants (kubectl-impersonate proxy --sudo)")
		return
	case grant != "":
		l.grant = elevation.Ref(ns, grant)
		h.elevate(w, r, l, u, ns, grant)
		return
	case h.CallerImpersonation == nil:
		h.refuse(w, l, http.StatusForbidden, "request", "caller sent impersonation headers",
			"impersonation headers are not accepted through the impersonating proxy")
		return
	}
	// What could not be forwarded is refused before any question.
	if err := h.forwardable(asked.Info()); err != nil {
		h.refuse(w, l, http.StatusForbidden, "identity", err.Error(),
			"the impersonated identity cannot be forwarded through this proxy: "+err.Error())
		return
	}
	l.asked = asked
	h.impersonate(w, r, l, u)
}

// asksForGrant tells whether h carries the extra that asks for a sudo
// grant, in any spelling.
func asksForGrant(h http.Header) bool {
	for name := range h {
		k, _ := url.PathUnescape(strings.TrimPrefix(attributes.NormalHeader(name), "impersonate-extra-"))
		if strings.EqualFold(k, sudo.GrantExtra) {
			return true
		}
	}
	return false
}

// forwardable refuses what the proxy must not forward as an identity
// (identity.Forwardable), and what only an elevation carries
// (sudo.Reserved): a token's sudo: group would be given the role its
// RoleBinding binds.
func (h *Handler) forwardable(u user.Info) error {
	if err := identity.Forwardable(u, h.AllowSystemIdentities); err != nil {
		return err
	}
	if why := sudo.Reserved(u); why != "" {
		return errors.New(why)
	}
	return nil
}

// impersonate runs kubectl --as through kube-apiserver's impersonation
// filter: it asks the caller's questions (SubjectAccessReviews about the
// caller, never the proxy) and hands what it allows to
// serveImpersonated; its refusals are kube-apiserver's Status answers.
func (h *Handler) impersonate(w http.ResponseWriter, r *http.Request, l *requestLog, caller user.Info) {
	ri, err := attributes.Resolver.NewRequestInfo(r)
	if err != nil {
		h.refuse(w, l, http.StatusBadRequest, "request", "request info: "+err.Error(), "the request could not be read")
		return
	}
	// The questions end by --request-timeout's time, and the connection's
	// reads and writes a little later (the refusal must still be written)
	// until the request is forwarded (forward sets its own).
	deadline := time.Now().Add(RequestTimeout)
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(deadline.Add(refusalGrace))
	_ = rc.SetWriteDeadline(deadline.Add(refusalGrace))
	ctx := apirequest.WithRequestInfo(apirequest.WithUser(r.Context(), identity.WithAuthenticated(caller)), ri)
	ctx = identity.WithDeadline(ctx, deadline)
	// A refusal is written uncompressed (its message is the audit line's
	// reason, and may become text); the caller's Accept-Encoding goes
	// upstream with the request (serveImpersonated).
	l.acceptEncoding = r.Header.Values("Accept-Encoding")
	r.Header.Del("Accept-Encoding")
	sw := &statusWriter{ResponseWriter: w, l: l, header: http.Header{}}
	h.impersonation.ServeHTTP(sw, r.WithContext(ctx))
	if msg, refused := sw.finish(); refused {
		l.reason = "impersonation refused: " + logging.OneLine(msg, 0)
		h.Metrics.refused("impersonation")
	}
}

// serveImpersonated forwards a request the impersonation filter allowed,
// as the identity it allowed (identity.ForwardedAs).
func (h *Handler) serveImpersonated(w http.ResponseWriter, r *http.Request) {
	l := r.Context().Value(logKey{}).(*requestLog)
	l.impersonated = true
	for _, v := range l.acceptEncoding {
		r.Header.Add("Accept-Encoding", v)
	}
	got, _ := apirequest.UserFrom(r.Context())
	target := identity.ForwardedAs(got, l.user, l.asked)
	if err := h.forwardable(target); err != nil {
		h.refuse(w, l, http.StatusForbidden, "identity", err.Error(),
			"the impersonated identity cannot be forwarded through this proxy: "+err.Error())
		return
	}
	l.original, l.user = l.user, target
	h.forward(w, r, l, target)
}

// elevate serves a request under the grant ns/name (pkg/server/sudo):
// in ns, as the caller with the grant's group and extras, until the grant
// ends, and so the caller's questions about itself (selfReview); outside
// any namespace (discovery, cluster-scoped resources), as the caller alone
// while the grant counts; in another namespace, refused. A
// view of grants that is not current is 503, never a stale allow.
func (h *Handler) elevate(w http.ResponseWriter, r *http.Request, l *requestLog, caller user.Info, ns, name string) {
	if p := r.URL.EscapedPath(); strings.Contains(p, "//") || strings.Contains(p, ";") {
		// A gateway before kube-apiserver may merge slashes or drop path
		// parameters, and turn what the proxy read as another request
		// into a TokenRequest the clamp did not see.
		h.refuse(w, l, http.StatusBadRequest, "sudo", "empty segment or ; in an elevated path",
			"an elevated request's path may not contain empty segments (//) or ;")
		return
	}
	ri, err := attributes.Resolver.NewRequestInfo(r)
	if err != nil {
		h.refuse(w, l, http.StatusBadRequest, "request", "request info: "+err.Error(), "the request could not be read")
		return
	}
	e, err := h.Sudo.Elevate(caller, ns, name)
	switch {
	case errors.Is(err, sudo.ErrNotCurrent):
		w.Header().Set("Retry-After", "1")
		h.refuse(w, l, http.StatusServiceUnavailable, "sudo_not_current", err.Error(),
			"the impersonating proxy cannot tell whether sudo grant "+elevation.Ref(ns, name)+" counts now, try again")
		return
	case err != nil:
		h.refuse(w, l, http.StatusForbidden, "sudo", err.Error(), logging.OneLine(err.Error(), 0))
		return
	}
	switch {
	case ri.Namespace != "" && ri.Namespace != ns:
		msg := fmt.Sprintf("sudo grant %s is for namespace %s, not %s", elevation.Ref(ns, name), ns, ri.Namespace)
		h.refuse(w, l, http.StatusForbidden, "sudo", msg, msg)
		return
	case ri.Namespace == "" && !selfReview(ri):
		h.forward(w, r, l, caller)
		return
	}
	if ri.IsResourceRequest && ri.Verb == "create" && ri.APIGroup == "" && ri.Resource == "serviceaccounts" &&
		ri.Subresource == "token" {
		if err := sudo.ClampTokenRequest(r, e.Ends, time.Now()); err != nil {
			h.refuse(w, l, http.StatusForbidden, "sudo", err.Error(), logging.OneLine(err.Error(), 0))
			return
		}
	}
	l.elevation, l.user = e, e.As
	h.forward(w, r, l, e.As)
}

// selfReview tells whether ri asks the cluster about the caller itself
// (kubectl auth whoami, auth can-i, can-i --list): under a grant, it asks
// about the caller with the grant's group, and only learns.
func selfReview(ri *apirequest.RequestInfo) bool {
	if !ri.IsResourceRequest || ri.Verb != "create" || ri.Subresource != "" {
		return false
	}
	switch ri.APIGroup + "/" + ri.Resource {
	case "authorization.k8s.io/selfsubjectaccessreviews", "authorization.k8s.io/selfsubjectrulesreviews",
		"authentication.k8s.io/selfsubjectreviews":
		return true
	}
	return false
}

// forward sends the request upstream as u; under a grant, it (a stream
// included) ends when the grant does.
func (h *Handler) forward(w http.ResponseWriter, r *http.Request, l *requestLog, u user.Info) {
	ctx := r.Context()
	if e := l.elevation; e != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, e.Ends)
		defer cancel()
		done := ctx.Done()
		go func() {
			select {
			case <-e.Revoked:
				cancel()
			case <-done:
			}
		}()
		// A watch cut by the grant's end makes ReverseProxy abort the
		// response (http.ErrAbortHandler): it ends instead, and the audit
		// line says why.
		defer func() {
			if v := recover(); v != nil {
				//nolint:errorlint // ReverseProxy panics with this very value
				if v != http.ErrAbortHandler || ctx.Err() == nil {
					panic(v)
				}
				if e.Over(time.Now()) {
					l.reason = "closed: sudo grant " + elevation.Ref(e.Namespace, e.Name) + " ended"
				}
			}
		}()
	}
	if upstream.LongRunning(r) {
		l.release() // watches, exec, logs: not counted, not timed (kube-apiserver's rules)
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Time{}) // the impersonation filter's, if it ran
		_ = rc.SetWriteDeadline(time.Time{})
	} else {
		// kube-apiserver's --request-timeout: the upstream request (an
		// upgrade's connection included) ends with the context, and the
		// deadlines cut a caller that stops reading or writing.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, RequestTimeout)
		defer cancel()
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(RequestTimeout))
		_ = rc.SetWriteDeadline(time.Now().Add(RequestTimeout))
	}
	h.proxy.ServeHTTP(w, r.WithContext(context.WithValue(ctx, identityKey{}, u)))
}

// statusWriter holds a refusal of the impersonation filter back, for the
// audit line's reason, and writes it on as it was (kube-apiserver's
// Status) or as its message in text (textRefusal); what the filter lets
// through passes. The filter's headers are its own until it lets the
// request through.
type statusWriter struct {
	http.ResponseWriter
	l      *requestLog
	code   int
	body   bytes.Buffer
	header http.Header
}

// Header is the filter's own until it lets the request through.
func (t *statusWriter) Header() http.Header {
	if t.l.impersonated {
		return t.ResponseWriter.Header()
	}
	return t.header
}

func (t *statusWriter) WriteHeader(code int) {
	if code >= 400 && !t.l.impersonated {
		t.code = code
		return
	}
	t.ResponseWriter.WriteHeader(code)
}

func (t *statusWriter) Write(b []byte) (int, error) {
	if t.code != 0 {
		return t.body.Write(b)
	}
	return t.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (t *statusWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// finish writes the refusal held back, if any, and returns its message.
func (t *statusWriter) finish() (string, bool) {
	if t.code == 0 {
		return "", false
	}
	var st metav1.Status
	msg := http.StatusText(t.code) // a Status in another encoding (YAML, protobuf) says no more here
	if json.Unmarshal(t.body.Bytes(), &st) == nil && st.Message != "" {
		msg = st.Message
	}
	if t.l.text {
		Status(t.ResponseWriter, true, t.code, st.Reason, msg)
		return msg, true
	}
	for k, v := range t.header {
		t.ResponseWriter.Header()[k] = v
	}
	t.ResponseWriter.WriteHeader(t.code)
	_, _ = t.ResponseWriter.Write(t.body.Bytes())
	return msg, true
}

// authenticate returns the request's caller, or refuses it and returns
// nil: 503 with Retry-After while the issuers' keys are not loaded (the
// token may be good: the client should try again, not log in again), else
// 401.
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request, l *requestLog) user.Info {
	resp, ok, err := h.requests.AuthenticateRequest(r)
	if ok && resp != nil && resp.User != nil {
		h.authentications.Add(1)
		return resp.User
	}
	reason := "no authenticator accepts the token"
	if err != nil {
		reason = logging.OneLine(err.Error(), 0)
	}
	if h.AuthenticatorReady != nil {
		if nerr := h.AuthenticatorReady(); nerr != nil {
			// Starting (or the issuer unreachable): say so, and when to
			// try again, as kube-apiserver's not-ready answers do.
			w.Header().Set("Retry-After", "1")
			h.refuse(w, l, http.StatusServiceUnavailable, "not_ready", "token not checked: the issuers' keys are not "+
				"loaded: "+logging.OneLine(nerr.Error(), 0),
				"the impersonating proxy is not ready to authenticate yet, try again")
			return nil
		}
	}
	h.refuse(w, l, http.StatusUnauthorized, "invalid_token", "token refused: "+reason, "Unauthorized")
	return nil
}

// hasCredential tells whether the request carries a token for the
// request authenticators: an Authorization header, or a WebSocket bearer
// subprotocol.
func hasCredential(r *http.Request) bool {
	if strings.TrimSpace(r.Header.Get("Authorization")) != "" {
		return true
	}
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		if upstream.HasWebSocketToken(v) {
			return true
		}
	}
	return false
}
