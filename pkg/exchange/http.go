// Package exchange turns one identity's token into a token that acts as
// another user: CloudSigma's three-step impersonation (client credentials →
// Keycloak UMA ticket → the service-provider impersonate endpoint) and RFC
// 8693 token exchange as Keycloak implements it (standard V2, and legacy V1
// with requested_subject).
package exchange

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/logging"
)

// RetryPolicy bounds the retries of a request that the server answered 429
// or 5xx, or that failed on the network: exponential backoff with full
// jitter, Retry-After honoured, all within Budget.
type RetryPolicy struct {
	Attempts int
	Base     time.Duration
	Max      time.Duration
	Budget   time.Duration
	// Sleep and Jitter are stubbable for tests.
	Sleep  func(context.Context, time.Duration) error
	Jitter func(max time.Duration) time.Duration
	// Observe, when set, is told of every failed attempt that will be
	// retried (for the audit log).
	Observe func(attempt int, err error)
}

// DefaultRetryPolicy: 4 attempts, 250 ms doubling to 4 s, 20 s in all.
var DefaultRetryPolicy = RetryPolicy{Attempts: 4, Base: 250 * time.Millisecond, Max: 4 * time.Second, Budget: 20 * time.Second}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	d := DefaultRetryPolicy
	if p.Attempts > 0 {
		d.Attempts = p.Attempts
	}
	if p.Base > 0 {
		d.Base = p.Base
	}
	if p.Max > 0 {
		d.Max = p.Max
	}
	if p.Budget > 0 {
		d.Budget = p.Budget
	}
	d.Sleep, d.Jitter, d.Observe = p.Sleep, p.Jitter, p.Observe
	if d.Sleep == nil {
		d.Sleep = sleepCtx
	}
	if d.Jitter == nil {
		d.Jitter = func(max time.Duration) time.Duration {
			if max <= 0 {
				return 0
			}
			return time.Duration(rand.Int64N(int64(max) + 1))
		}
	}
	return d
}

// delay is how long to wait before attempt n+1 (n from 0).
func (p RetryPolicy) delay(n int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return retryAfter
	}
	backoff := p.Base << n
	if backoff > p.Max || backoff <= 0 {
		backoff = p.Max
	}
	return p.Jitter(backoff)
}

func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return t.Sub(now)
	}
	return 0
}

// response is a completed HTTP exchange.
type response struct {
	status      int
	contentType string
	body        []byte
}

// do sends the request built by newReq, retrying per the policy.
func do(ctx context.Context, hc *http.Client, p RetryPolicy, newReq func() (*http.Request, error)) (*response, error) {
	p = p.withDefaults()
	start := time.Now()
	var lastErr error
	for attempt := 0; attempt < p.Attempts; attempt++ {
		req, err := newReq()
		if err != nil {
			return nil, err
		}
		resp, err := hc.Do(req.WithContext(ctx))
		var retryAfter time.Duration
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			lastErr = &NetworkError{Host: req.URL.Host, Err: err}
		} else {
			body, rerr := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			_ = resp.Body.Close()
			ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
			r := &response{status: resp.StatusCode, contentType: ct, body: body}
			if rerr != nil {
				lastErr = fmt.Errorf("reading the answer of %s: %w", req.URL.Host, rerr)
			} else if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < 500 {
				return r, nil
			} else {
				lastErr = &HTTPError{Status: resp.StatusCode, Detail: describeBody(r)}
				retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
			}
		}
		if attempt == p.Attempts-1 {
			break
		}
		if p.Observe != nil {
			p.Observe(attempt+1, lastErr)
		}
		wait := p.delay(attempt, retryAfter)
		if time.Since(start)+wait > p.Budget {
			return nil, fmt.Errorf("%w (gave up: the next retry, in %s, would pass the %s retry budget)", lastErr, wait.Round(time.Millisecond), p.Budget)
		}
		if err := p.Sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w (after %d attempts)", lastErr, p.Attempts)
}

// HTTPError is an answer that is not a success.
type HTTPError struct {
	Status int
	Detail string
}

// Transient is true for the provider's passing trouble (5xx, 429): a
// cached token still valid may be served meanwhile.
func (e *HTTPError) Transient() bool {
	return e.Status >= 500 || e.Status == http.StatusTooManyRequests
}

// NetworkError is a request that got no answer; it is transient.
type NetworkError struct {
	Host string
	Err  error
}

func (e *NetworkError) Error() string   { return fmt.Sprintf("no answer from %s: %v", e.Host, e.Err) }
func (e *NetworkError) Unwrap() error   { return e.Err }
func (e *NetworkError) Transient() bool { return true }

func (e *HTTPError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("HTTP %d", e.Status)
	}
	return fmt.Sprintf("HTTP %d: %s", e.Status, e.Detail)
}

// describeBody names a provider's error from its body: OAuth's
// error/error_description, CloudSigma's error_type/error_message (an
// object or a list of them), or the content type when it is neither.
func describeBody(r *response) string {
	var oauth struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if json.Unmarshal(r.body, &oauth) == nil && oauth.Error != "" {
		if oauth.Description != "" {
			return logging.OneLine(oauth.Error, 200) + ": " + logging.OneLine(oauth.Description, 200)
		}
		return logging.OneLine(oauth.Error, 200)
	}
	type csError struct {
		Type    string `json:"error_type"`
		Message string `json:"error_message"`
		Point   any    `json:"error_point"`
	}
	var list []csError
	var one csError
	if json.Unmarshal(r.body, &list) == nil && len(list) > 0 && list[0].Type != "" {
		one = list[0]
	} else {
		_ = json.Unmarshal(r.body, &one)
	}
	if one.Type != "" || one.Message != "" {
		s := logging.OneLine(one.Type, 200) + ": " + logging.OneLine(one.Message, 200)
		if one.Point != nil {
			s += " (at " + logging.OneLine(fmt.Sprint(one.Point), 200) + ")"
		}
		return s
	}
	ct := logging.OneLine(r.contentType, 200)
	if ct == "" {
		ct = "no content type"
	}
	return "an answer with " + ct + ", not an error document"
}

// tokenResponse is an OAuth 2.0 token response (RFC 6749 §5.1, RFC 8693 §2.2.1).
type tokenResponse struct {
	AccessToken     string      `json:"access_token" datapolicy:"token"`
	TokenType       string      `json:"token_type"`
	ExpiresIn       json.Number `json:"expires_in"`
	RefreshToken    string      `json:"refresh_token" datapolicy:"token"`
	IssuedTokenType string      `json:"issued_token_type"`
}

func (t *tokenResponse) lifetime(def time.Duration) time.Duration {
	if n, err := t.ExpiresIn.Int64(); err == nil && n > 0 && n < int64(maxLifetime/time.Second) {
		return time.Duration(n) * time.Second
	}
	return def
}

// postToken posts form to a token endpoint, authenticating with auth.
func postToken(ctx context.Context, hc *http.Client, p RetryPolicy, tokenURL string, form url.Values, auth func(*http.Request)) (*tokenResponse, error) {
	r, err := do(ctx, hc, p, func() (*http.Request, error) {
		req, err := http.NewRequest(http.MethodPost, tokenURL, strings.NewReader(form.Encode()))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		auth(req)
		return req, nil
	})
	if err != nil {
		return nil, err
	}
	return parseTokenResponse(r)
}

// parseTokenResponse reads a token endpoint's answer: a token response,
// or the provider's error in one line.
func parseTokenResponse(r *response) (*tokenResponse, error) {
	if r.status != http.StatusOK {
		return nil, &HTTPError{Status: r.status, Detail: describeBody(r)}
	}
	var t tokenResponse
	if err := json.Unmarshal(r.body, &t); err != nil {
		return nil, fmt.Errorf("the token endpoint answered 200 with %s that is not a token response: %s", logging.OneLine(r.contentType, 200), logging.OneLine(err.Error(), 200))
	}
	if t.AccessToken == "" {
		return nil, errors.New("the token endpoint answered without an access_token")
	}
	return &t, nil
}

// clientAuth authenticates a client with client_secret_basic (RFC 6749
// §2.3.1: form-encoded id and secret), or with client_id alone in the form
// for a public client.
// Client authentication methods at a token endpoint (RFC 6749 2.3.1).
const (
	// AuthPost sends client_id and client_secret in the form body
	// (client_secret_post), as CloudSigma's documents show.
	AuthPost = "post"
	// AuthBasic sends them with HTTP Basic (client_secret_basic).
	AuthBasic = "basic"
)

// clientAuth authenticates the client with method (AuthPost or AuthBasic;
// "" is basic); a public client sends only client_id.
func clientAuth(form url.Values, method, id, secret string) func(*http.Request) {
	if secret == "" || method == AuthPost {
		form.Set("client_id", id)
		if secret != "" {
			form.Set("client_secret", secret)
		}
		return func(*http.Request) {}
	}
	return func(r *http.Request) { r.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret)) }
}

func bearerAuth(token string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }
}

// postJSON posts v as JSON with auth and decodes a 200 answer into out.
func postJSON(ctx context.Context, hc *http.Client, p RetryPolicy, u string, v any, auth func(*http.Request), out any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	r, err := do(ctx, hc, p, func() (*http.Request, error) {
		req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		auth(req)
		return req, nil
	})
	if err != nil {
		return err
	}
	if r.status != http.StatusOK && r.status != http.StatusCreated {
		return &HTTPError{Status: r.status, Detail: describeBody(r)}
	}
	if err := json.Unmarshal(r.body, out); err != nil {
		return fmt.Errorf("answered %d with %s that is not the expected JSON: %s", r.status, logging.OneLine(r.contentType, 200), logging.OneLine(err.Error(), 200))
	}
	return nil
}
