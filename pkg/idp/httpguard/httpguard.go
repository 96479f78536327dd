// Package httpguard bounds what this program reads from identity providers
// and how often it asks them.
//
//   - Every answer is cut off at a size no real provider reaches.
//   - A GET repeated within an interval (a JWKS refetch that tokens with
//     unknown key IDs trigger, one per request) is answered from the last
//     copy instead of the network.
package httpguard

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// MaxAnswerSize bounds every answer: discovery documents, JWKS and token
// responses are a few KiB.
const MaxAnswerSize = 1 << 20

// ErrAnswerTooLarge is what reading past MaxAnswerSize returns.
var ErrAnswerTooLarge = fmt.Errorf("the answer is larger than %d KiB: refusing to read it", MaxAnswerSize>>10)

// ErrNoNetwork is what a client built by NoNetwork returns.
var ErrNoNetwork = errors.New("refusing to contact a URL that an unverified token names")

// Bounded wraps next so that every response body fails once MaxAnswerSize
// bytes have been read.
func Bounded(next http.RoundTripper) http.RoundTripper { return bounded{next} }

type bounded struct{ next http.RoundTripper }

func (b bounded) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := b.next.RoundTrip(r)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if resp.ContentLength > MaxAnswerSize {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("%s: %w", r.URL.Redacted(), ErrAnswerTooLarge)
	}
	resp.Body = &boundedBody{ReadCloser: resp.Body, left: MaxAnswerSize}
	return resp, nil
}

type boundedBody struct {
	io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, ErrAnswerTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, ErrAnswerTooLarge
	}
	return n, err
}

// RateLimited wraps next (which should be Bounded) so that an anonymous GET
// of a URL goes to the network at most once per interval: within it, the
// last successful answer's copy is served, or, when the last attempt
// failed (an issuer answering 5xx is the one to spare), ErrRateLimited.
// Requests with credentials (an Authorization header: distributed claims)
// and other methods always go through.
func RateLimited(next http.RoundTripper, interval time.Duration) http.RoundTripper {
	return &rateLimited{next: next, interval: interval, last: map[string]*copyOf{}, tried: map[string]time.Time{},
		now: time.Now}
}

// ErrRateLimited answers a refetch within the interval after a failed one.
var ErrRateLimited = errors.New("asked again too soon after a failed request: waiting before the next one")

type copyOf struct {
	at     time.Time
	status int
	header http.Header
	body   []byte
}

type rateLimited struct {
	next     http.RoundTripper
	interval time.Duration
	now      func() time.Time

	mu    sync.Mutex
	last  map[string]*copyOf
	tried map[string]time.Time
}

func (l *rateLimited) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet || r.Header.Get("Authorization") != "" {
		return l.next.RoundTrip(r)
	}
	key := r.URL.String()
	l.mu.Lock()
	if at, ok := l.tried[key]; ok && l.now().Sub(at) < l.interval {
		c := l.last[key]
		l.mu.Unlock()
		if c == nil {
			return nil, fmt.Errorf("%s: %w", r.URL.Redacted(), ErrRateLimited)
		}
		return &http.Response{StatusCode: c.status, Status: http.StatusText(c.status), Header: c.header.Clone(),
			Body: io.NopCloser(bytes.NewReader(c.body)), ContentLength: int64(len(c.body)), Request: r,
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}, nil
	}
	l.tried[key] = l.now()
	l.mu.Unlock()
	resp, err := l.next.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.last[key] = &copyOf{at: l.now(), status: resp.StatusCode, header: resp.Header.Clone(), body: body}
	l.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// NoNetwork is a client that sends nothing: for code that may fetch what
// an unverified token names (k8s.io/apiserver's distributed claims).
func NoNetwork() *http.Client {
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return nil, fmt.Errorf("%s: %w", r.URL.Redacted(), ErrNoNetwork)
	})}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
