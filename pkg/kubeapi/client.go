// Package kubeapi talks to the API server with the transport client-go
// builds for a kubeconfig, and asks it who the caller is (SelfSubjectReview)
// and which version it runs. It decodes plain JSON into k8s.io/api types:
// client-go's typed clients would link the scheme of every API group.
package kubeapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/rest"
)

// Client posts to the API server with the transport client-go builds for a
// kubeconfig (TLS, exec plugins, impersonation headers). It decodes plain
// JSON into k8s.io/api types: client-go's typed clients would link the
// scheme of every API group.
type Client struct {
	hc       *http.Client
	host     string
	requests atomic.Int64
	// left is what is left of MaxAnswers for this client's answers.
	left atomic.Int64
}

// The bounds of what a client reads of the API server's answers, which a
// hostile server chooses (docs/security.md, "The API server"): one answer
// at most its limit (MaxPost for reviews, MaxGet for discovery and the
// RBAC lists, MaxList for a page of objects), all of a client's answers
// together at most MaxAnswers, whatever the pages, namespaces or reviews.
// Past either, the command ends with one line naming the bound. What the
// client holds at once is bounded by these and the pages' objects it
// keeps: TestHostileAnswerSizes measures the peak of list -A against an
// endless list and a body without end (docs/security.md).
const (
	MaxPost    = 4 << 20
	MaxGet     = 32 << 20
	MaxList    = 64 << 20
	MaxAnswers = 256 << 20
)

// ErrTooLarge matches the error of an answer past a bound (errors.Is).
var ErrTooLarge = errors.New("answer too large")

// TooLarge is an error past a bound: its text says which.
type TooLarge string

func (e TooLarge) Error() string        { return string(e) }
func (e TooLarge) Is(target error) bool { return target == ErrTooLarge }

// Requests is the number of requests sent so far.
func (c *Client) Requests() int { return int(c.requests.Load()) }

// NewClient returns a Client for cfg.
func NewClient(cfg *rest.Config) (*Client, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the API client: %w", err)
	}
	c := &Client{hc: hc, host: strings.TrimSuffix(cfg.Host, "/")}
	c.left.Store(MaxAnswers)
	softLimit.Do(func() {
		if os.Getenv("GOMEMLIMIT") == "" {
			debug.SetMemoryLimit(MemoryLimit)
		}
	})
	return c, nil
}

// MemoryLimit is the Go runtime's soft memory limit in a process that
// reads an API server's answers (unless $GOMEMLIMIT sets one): what a
// command keeps of MaxAnswers, and the answers it decodes, are collected
// before the heap grows to twice that, as it otherwise could. With it,
// list's peak against an endless list stays under the ceiling
// docs/security.md states (TestHostileAnswerSizes).
const MemoryLimit = MaxAnswers + 128<<20

var softLimit sync.Once

// readAnswer reads resp's body, at most limit bytes and what is left of
// MaxAnswers; past either, an error that names the bound.
func (c *Client) readAnswer(resp *http.Response, path string, limit int64) ([]byte, error) {
	left := max(c.left.Load(), 0)
	b, err := io.ReadAll(io.LimitReader(resp.Body, min(limit, left)+1))
	if err != nil {
		return nil, fmt.Errorf("reading the answer of %s: %w", path, err)
	}
	if c.left.Add(-int64(len(b))) < 0 && int64(len(b)) <= limit {
		return nil, TooLarge(fmt.Sprintf("the API server's answers to this command add up to more than %d MiB, the limit for one command: narrow it (a namespace, a label selector)", MaxAnswers>>20))
	}
	if int64(len(b)) > limit {
		return nil, TooLarge(fmt.Sprintf("the answer of %s is larger than %d MiB, the limit for one answer", path, limit>>20))
	}
	return b, nil
}

// APIError is a Kubernetes Status answer.
type APIError struct {
	Code    int
	Reason  string
	Message string
}

// Error reads like kubectl's "Error from server (Reason): message".
func (e *APIError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("the server answered %d: %s", e.Code, e.Message)
	}
	return fmt.Sprintf("Error from server (%s): %s", e.Reason, e.Message)
}

// Post sends in as JSON to path and decodes a 2xx answer into out.
func (c *Client) Post(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodPost, path, "", bytes.NewReader(body), MaxPost, out)
}

// Get decodes the answer to a GET of path into out. Discovery documents
// and lists of RBAC objects can be large: up to MaxGet.
func (c *Client) Get(ctx context.Context, path string, out any) error {
	return c.do(ctx, http.MethodGet, path, "", nil, MaxGet, out)
}

// GetAs is Get with another Accept (e.g. metadata-only lists), a page of
// objects: up to MaxList.
func (c *Client) GetAs(ctx context.Context, path, accept string, out any) error {
	return c.do(ctx, http.MethodGet, path, accept, nil, MaxList, out)
}

// do sends one request and decodes a 2xx answer of at most limit bytes
// into out; other answers become an APIError from their Status.
func (c *Client) do(ctx context.Context, method, path, accept string, body io.Reader, limit int64, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.host+path, body)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if accept == "" {
		accept = "application/json"
	}
	req.Header.Set("Accept", accept)
	c.requests.Add(1)
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := c.readAnswer(resp, path, limit)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return statusError(resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("decoding the answer of %s: %w", path, err)
	}
	return nil
}

// statusError reads a Kubernetes Status body.
func statusError(code int, b []byte) error {
	var st struct {
		Reason  string `json:"reason"`
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &st) != nil || st.Message == "" {
		st.Message = strings.TrimSpace(string(b))
	}
	return &APIError{Code: code, Reason: st.Reason, Message: st.Message}
}
