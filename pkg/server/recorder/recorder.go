// Package recorder is record's endpoint: a reverse proxy on 127.0.0.1 for
// one child process.
//
//   - The child reaches it with TLS under a one-time CA and a one-time
//     bearer token.
//   - It forwards each request to the context's cluster with the context's
//     own credentials.
//   - It writes each request as kube-apiserver's authorizer sees it
//     (pkg/server/attributes), with the cluster's answer
//     (pkg/cluster/auditlog's Event lines).
//
// It links kube-apiserver's request and authentication packages, so only
// kubectl-impersonate-apiserver imports it (pkg/server/kubecode/linked).
package recorder

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/apiserver/pkg/authentication/request/websocket"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/auditlog"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/attributes"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/kubecode"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/proxy"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/upstream"
)

// Endpoint is a running recording endpoint.
type Endpoint struct {
	// url is https://127.0.0.1:PORT.
	url string
	// ca is the one-time CA's certificate (PEM), the only one that signed
	// the endpoint's.
	ca []byte
	// token is the one-time bearer token the child sends.
	token string

	srv    *http.Server
	h      *handler
	cancel context.CancelFunc
	done   chan struct{}
	rec    *writer
}

// Options are an endpoint's upstream and where it writes
// (kubecode.RecordConfig).
type Options = kubecode.RecordConfig

// Start listens on 127.0.0.1 and serves until Close.
func Start(o Options) (*Endpoint, error) {
	if o.Upstream == nil || o.Transport == nil || o.UpgradeTransport == nil {
		return nil, errors.New("record's endpoint needs the cluster's URL and transports")
	}
	target := o.Upstream
	plain, upgrade := o.Transport, o.UpgradeTransport
	caPEM, cert, err := oneTimeCert()
	if err != nil {
		return nil, err
	}
	token, err := randomToken()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening on 127.0.0.1: %w", err)
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	e := &Endpoint{url: "https://" + ln.Addr().String(), ca: caPEM, token: token,
		done: make(chan struct{}), rec: &writer{w: o.Log, now: now}}
	errorLog := log.New(io.Discard, "", 0)
	if o.ErrorLog != nil {
		errorLog = log.New(o.ErrorLog, logging.Prefix+"record: ", 0)
	}
	base, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	h := &handler{impersonates: o.Impersonates, authn: oneTimeToken([]byte(token)), rec: e.rec}
	h.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = target.Host
			// What the cluster is asked is read from the request as it
			// leaves, after httputil dropped the hop-by-hop headers and
			// those Connection names (the endpoint refuses those naming
			// an identity header all the same).
			if st, ok := pr.In.Context().Value(stateKey{}).(*state); ok {
				// The headers as they leave, the path as the command sent
				// it: an upstream's path prefix (a gateway's /k8s/clusters/ID)
				// is none of the API's.
				out := pr.Out.Clone(pr.Out.Context())
				out.URL.Path, out.URL.RawPath = pr.In.URL.Path, pr.In.URL.RawPath
				st.reqs, st.impersonated = attributes.Of(out), out.Header.Get("Impersonate-User")
			}
		},
		Transport:      upstream.UpgradeSplit{Plain: plain, Upgrade: upgrade},
		FlushInterval:  -1,
		ErrorLog:       errorLog,
		ModifyResponse: modifyResponse,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			errorLog.Printf("forwarding %s %s: %s", r.Method, logging.OneLine(r.URL.Path, 200),
				logging.OneLine(err.Error(), 300))
			// No answer: nothing says the cluster allowed it.
			recordOf(r, http.StatusBadGateway)
			proxy.Status(w, false, http.StatusBadGateway, metav1.StatusReasonServiceUnavailable,
				"kubectl impersonate record could not reach the cluster")
		},
	}
	e.h = h
	e.srv = &http.Server{Handler: h, ErrorLog: errorLog, ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout: idleTimeout,
		BaseContext: func(net.Listener) context.Context { return base },
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert},
			NextProtos: []string{"h2", "http/1.1"}}}
	go func() {
		defer close(e.done)
		_ = e.srv.ServeTLS(ln, "", "")
	}()
	return e, nil
}

// idleTimeout closes a connection that sends nothing more (one refused
// for want of the token included).
const idleTimeout = 90 * time.Second

// closeWait bounds Close's wait for the requests still running.
const closeWait = 10 * time.Second

// Close stops the endpoint and the requests still running (a watch, an
// exec: the hijacked connections too), waits for them to be written (at
// most closeWait), and says whether a write of the log failed.
func (e *Endpoint) Close() error {
	e.cancel()
	err := e.srv.Close()
	<-e.done
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	waited := make(chan struct{})
	go func() { e.h.inflight.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(closeWait):
	}
	e.rec.mu.Lock()
	e.rec.closed = true
	e.rec.mu.Unlock()
	return errors.Join(err, e.rec.failed())
}

// Counts are how many checks the endpoint wrote, and how many of them the
// cluster was not seen to allow (refused, or undecided).
func (e *Endpoint) Counts() (written, refused int) {
	e.rec.mu.Lock()
	defer e.rec.mu.Unlock()
	return e.rec.written, e.rec.refused
}

// Endpoint is what the child's kubeconfig holds: the URL, the one-time CA
// and the one-time token.
func (e *Endpoint) Endpoint() kubecode.RecordEndpoint {
	return kubecode.RecordEndpoint{URL: e.url, CAPEM: e.ca, Token: e.token}
}

// handler checks the one-time token, strips it, records and forwards.
type handler struct {
	// impersonates: the context impersonates (refusal).
	impersonates bool
	authn        authenticator.Request
	rec          *writer
	proxy        *httputil.ReverseProxy
	inflight     sync.WaitGroup
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, ok, err := h.authn.AuthenticateRequest(r); !ok || err != nil {
		proxy.Status(w, false, http.StatusUnauthorized, metav1.StatusReasonUnauthorized,
			"Unauthorized: this endpoint serves the command kubectl impersonate record runs, with its one-time token")
		return
	}
	h.inflight.Add(1)
	defer h.inflight.Done()
	r.Header.Del("Authorization")
	upstream.StripWebSocketToken(r.Header)
	if code, reason, msg := h.refusal(r); code != 0 {
		proxy.Status(w, false, code, reason, msg)
		return
	}
	// The checks are those of the request as it leaves (the proxy's
	// Rewrite); until then, as it came.
	st := &state{rec: h.rec, reqs: attributes.Of(r), uri: r.URL.RequestURI(),
		impersonated: r.Header.Get("Impersonate-User")}
	// Written when the answer's headers come (a watch or an exec is
	// recorded while it runs), or when the handler ends without one: then
	// unanswered (the command went away first), and not granted.
	defer st.record(0)
	h.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), stateKey{}, st)))
}

// refusal is why the endpoint refuses r itself (0 when it does not):
// CONNECT and TRACE (a tunnel with the context's credential; the API uses
// neither); a "." or ".." segment (a gateway before the API server may
// resolve it elsewhere than the attributes say); and, when the context
// itself impersonates (--as, a kubeconfig's as:), the command's own
// Impersonate-* headers: client-go's impersonation would give way to them
// or add their groups, and the request would not be the context's.
func (h *handler) refusal(r *http.Request) (int, metav1.StatusReason, string) {
	switch {
	case r.Method == http.MethodConnect || r.Method == http.MethodTrace:
		return http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed,
			"kubectl impersonate record does not forward " + r.Method
	case attributes.HasDotSegment(r.URL):
		return http.StatusBadRequest, metav1.StatusReasonBadRequest,
			"kubectl impersonate record does not forward a path with . or .. segments"
	}
	if n := attributes.ConnectionNamesIdentity(r.Header); n != "" {
		return http.StatusForbidden, metav1.StatusReasonForbidden,
			fmt.Sprintf("kubectl impersonate record does not forward a Connection header naming %q: it would be "+
				"dropped in transit", n)
	}
	if h.impersonates {
		for name := range r.Header {
			if attributes.ImpersonationHeader(name) {
				return http.StatusForbidden, metav1.StatusReasonForbidden, "the recorded context already " +
					"impersonates (--as, or the kubeconfig's as:): the command may not impersonate as well"
			}
		}
	}
	return 0, "", ""
}

// oneTimeToken authenticates the one-time token as kube-apiserver
// authenticates a bearer token, with its own request authenticators: the
// Authorization header, or the WebSocket subprotocol that carries it where
// a client cannot set headers (kubectl exec over WebSockets). Compared in
// constant time.
func oneTimeToken(token []byte) authenticator.Request {
	tokens := authenticator.TokenFunc(func(_ context.Context, tok string) (*authenticator.Response, bool, error) {
		if subtle.ConstantTimeCompare([]byte(tok), token) != 1 {
			return nil, false, nil
		}
		return &authenticator.Response{User: &user.DefaultInfo{Name: "kubectl-impersonate-record"}}, true, nil
	})
	return union.New(bearertoken.New(tokens), websocket.NewProtocolAuthenticator(tokens))
}

// state is a request being forwarded: its checks, written once with the
// answer.
type state struct {
	rec          *writer
	reqs         []auditlog.Request
	uri          string
	impersonated string
	once         sync.Once
}

type stateKey struct{}

// record writes the request's checks with the answer's code (0: none).
func (st *state) record(code int) {
	st.once.Do(func() { st.rec.write(st.reqs, st.uri, st.impersonated, code) })
}

func recordOf(r *http.Request, code int) {
	if st, ok := r.Context().Value(stateKey{}).(*state); ok {
		st.record(code)
	}
}

// modifyResponse notes the cluster's answer when its headers come.
func modifyResponse(resp *http.Response) error {
	recordOf(resp.Request, resp.StatusCode)
	return nil
}

// writer writes the events, one line each, whole lines only.
type writer struct {
	mu               sync.Mutex
	w                io.Writer
	now              func() time.Time
	err              error
	closed           bool
	written, refused int
}

// write records reqs (impersonate checks first, then the request) with
// the answer's code. The request is decided by the code (auditlog.DecisionOf);
// an impersonate check is allowed only when the request was (an answer
// past the authorizer shows the impersonation filter, before it, let the
// request through), refused with a 401, and undecided otherwise: a 403 or
// a 400 may be the impersonation's own refusal, in any wording or
// encoding.
func (w *writer) write(reqs []auditlog.Request, uri, impersonated string, code int) {
	var buf bytes.Buffer
	n, notAllowed := 0, 0
	main := auditlog.DecisionOf(code)
	for i, r := range reqs {
		last := i == len(reqs)-1
		r.Code, r.Decision = code, main
		who := ""
		switch {
		case last:
			who = impersonated
		case code == http.StatusUnauthorized:
			r.Decision = auditlog.Forbid
		case main != auditlog.Allow:
			r.Decision = auditlog.Undecided
		}
		b, err := json.Marshal(r.Event(uri, who, w.now()))
		if err != nil {
			continue
		}
		buf.Write(append(b, '\n'))
		n++
		if r.Decision != auditlog.Allow {
			notAllowed++
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil || w.closed {
		return
	}
	if _, err := w.w.Write(buf.Bytes()); err != nil {
		w.err = fmt.Errorf("writing the recording: %w", err)
		return
	}
	w.written += n
	w.refused += notAllowed
}

func (w *writer) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// randomToken is 32 random bytes, base64url.
func randomToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making the one-time token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// oneTimeCert is a CA made for this run (its key never leaves memory) and
// the endpoint's certificate for 127.0.0.1, signed by it.
func oneTimeCert() (caPEM []byte, cert tls.Certificate, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, cert, fmt.Errorf("making the one-time CA: %w", err)
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1),
		Subject:   pkix.Name{CommonName: "kubectl impersonate record (one-time CA)"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(7 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true, MaxPathLenZero: true}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, cert, fmt.Errorf("making the one-time CA: %w", err)
	}
	if ca, err = x509.ParseCertificate(caDER); err != nil {
		return nil, cert, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, cert, fmt.Errorf("making the endpoint's key: %w", err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: now.Add(-time.Minute),
		NotAfter: now.Add(7 * 24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, cert, fmt.Errorf("making the endpoint's certificate: %w", err)
	}
	caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	return caPEM, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
