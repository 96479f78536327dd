package oauth

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
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
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
var DefaultRetryPolicy = RetryPolicy{Attempts: 4, Base: 250 * time.Millisecond, Max: 4 * time.Second,
	Budget: 20 * time.Second}

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

// run calls attempt until it succeeds, fails with an error that is not a
// transient *Error, or the policy gives up; attempt returns the answer's
// Retry-After with its error.
func (p RetryPolicy) run(ctx context.Context, attempt func() (time.Duration, error)) error {
	p = p.withDefaults()
	start := time.Now()
	var lastErr error
	for n := 0; n < p.Attempts; n++ {
		retryAfter, err := attempt()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var e *Error
		if !errors.As(err, &e) || !e.Transient() {
			return err
		}
		lastErr = err
		if n == p.Attempts-1 {
			break
		}
		if p.Observe != nil {
			p.Observe(n+1, err)
		}
		wait := p.delay(n, retryAfter)
		if time.Since(start)+wait > p.Budget {
			return fmt.Errorf("%w (gave up: the next retry, in %s, would pass the %s retry budget)", lastErr,
				wait.Round(time.Millisecond), p.Budget)
		}
		if err := p.Sleep(ctx, wait); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w (after %d attempts)", lastErr, p.Attempts)
}

// Response is a completed HTTP exchange, its body capped at 1 MiB.
type Response struct {
	Status      int
	ContentType string
	Body        []byte
}

// Do sends the request newReq builds, retrying transient failures per p.
// An answer that is not 2xx becomes an *Error naming peer.
func Do(ctx context.Context, hc *http.Client, p RetryPolicy, peer string,
	newReq func() (*http.Request, error)) (*Response, error) {
	var r *Response
	err := p.run(ctx, func() (time.Duration, error) {
		req, err := newReq()
		if err != nil {
			return 0, err
		}
		resp, err := hc.Do(req.WithContext(ctx))
		if err != nil {
			return 0, &Error{Peer: peer, Host: req.URL.Host, Err: err}
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return 0, &Error{Peer: peer, Host: req.URL.Host, Err: fmt.Errorf("reading the answer: %w", err)}
		}
		if resp.StatusCode/100 != 2 {
			return parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()),
				newError(peer, req.URL.Host, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		r = &Response{Status: resp.StatusCode, ContentType: ct, Body: body}
		return 0, nil
	})
	return r, err
}

// PostJSON posts v as JSON with the bearer token and decodes a 2xx answer
// into out.
func PostJSON(ctx context.Context, hc *http.Client, p RetryPolicy, peer, u, bearer string, v, out any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	r, err := Do(ctx, hc, p, peer, func() (*http.Request, error) {
		req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Authorization", "Bearer "+bearer)
		return req, nil
	})
	if err != nil {
		return err
	}
	if err := json.Unmarshal(r.Body, out); err != nil {
		return fmt.Errorf("%s answered %d with %s that is not the expected JSON: %s", peer, r.Status,
			logging.OneLine(r.ContentType, 100), logging.OneLine(err.Error(), 200))
	}
	return nil
}
