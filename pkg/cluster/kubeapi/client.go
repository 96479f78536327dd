// Package kubeapi talks to the API server with the transport client-go
// builds for a kubeconfig.
//
//   - It asks who the caller is (SelfSubjectReview) and which version the
//     server runs.
//   - It decodes plain JSON into k8s.io/api types: client-go's typed
//     clients would link the scheme of every API group.
package kubeapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

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
	budget   *Budget
}

// The bounds of what a command reads of the API servers' answers, which a
// hostile server chooses (docs/security.md, "The API server"): one answer
// at most its limit (MaxPost for reviews, MaxGet for discovery and the
// RBAC lists, MaxList for a page of objects) and all of them MaxAnswers;
// decoding one answer may take at most MaxDecodedAnswer, those the command
// keeps (discovery, RBAC objects, lists) MaxDecoded in all, and those it
// drops once read (reviews) MaxDecodedInFlight at once, as DecodeCost
// bounds them before decoding. Past a bound the command ends with one line
// that names it. TestHostileAnswerSizes measures the peak.
const (
	MaxPost            = 4 << 20
	MaxGet             = 32 << 20
	MaxList            = 64 << 20
	MaxAnswers         = 256 << 20
	MaxDecodedAnswer   = 128 << 20
	MaxDecoded         = 512 << 20
	MaxDecodedInFlight = 128 << 20
)

// Budget is what is left of the bounds for one command: the clients of a
// process share one (CommandBudget), since a command is a process.
type Budget struct {
	bytes, decoded, inFlight atomic.Int64
}

// NewBudget returns a full budget.
func NewBudget() *Budget {
	b := &Budget{}
	b.bytes.Store(MaxAnswers)
	b.decoded.Store(MaxDecoded)
	b.inFlight.Store(MaxDecodedInFlight)
	return b
}

// CommandBudget is the process's: every client NewClient returns uses it.
var CommandBudget = NewBudget()

// take takes up to n of v, what is left of it when less: the amount taken.
func take(v *atomic.Int64, n int64) int64 {
	for {
		left := v.Load()
		got := min(n, max(left, 0))
		if v.CompareAndSwap(left, left-got) {
			return got
		}
	}
}

// ErrTooLarge matches the error of an answer past a bound (errors.Is).
var ErrTooLarge = errors.New("answer too large")

// TooLarge is an error past a bound: its text says which.
type TooLarge string

func (e TooLarge) Error() string        { return string(e) }
func (e TooLarge) Is(target error) bool { return target == ErrTooLarge }

// Requests is the number of requests c has sent so far (count.go).
func (c *Client) Requests() int { return int(c.requests.Load()) }

// NewClient returns a Client for cfg, on the process's CommandBudget.
func NewClient(cfg *rest.Config) (*Client, error) {
	shared, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the API client: %w", err)
	}
	// A client of our own: client-go hands out http.DefaultClient itself
	// for a configuration that needs no transport of its own (plain HTTP,
	// no credentials), and what is set below must not reach it.
	hc := &http.Client{Transport: shared.Transport, Timeout: shared.Timeout}
	// No redirect is followed: client-go's transport adds Authorization
	// to every request it sends, so Go's stripping of it on a redirect to
	// another host would not apply, and an API server needs none.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	softLimit.Do(func() {
		// The runtime's limit, unchanged (-1 reads it): math.MaxInt64
		// unless $GOMEMLIMIT (or the program) set one.
		if debug.SetMemoryLimit(-1) == math.MaxInt64 {
			debug.SetMemoryLimit(MemoryLimit)
		}
	})
	c := &Client{hc: hc, host: strings.TrimSuffix(cfg.Host, "/"), budget: CommandBudget}
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	hc.Transport = counting{next: next, total: &c.requests}
	return c, nil
}

// WithBudget is c on budget b (tests: a budget of their own).
func (c *Client) WithBudget(b *Budget) *Client { c.budget = b; return c }

// MemoryLimit is the Go runtime's soft memory limit in a process that
// reads an API server's answers (unless $GOMEMLIMIT sets one): what a
// command keeps is collected before the heap grows to twice that, as it
// otherwise could.
const MemoryLimit = MaxDecoded + 256<<20

var softLimit sync.Once

// readAnswer reads resp's body, at most limit bytes and what is left of
// MaxAnswers (taken before reading, so that readers at once cannot pass
// it together); past either, an error that names the bound.
func (c *Client) readAnswer(resp *http.Response, path string, limit int64) ([]byte, error) {
	got := take(&c.budget.bytes, limit+1)
	b, err := io.ReadAll(io.LimitReader(resp.Body, got))
	c.budget.bytes.Add(got - int64(len(b))) // what was not read is given back
	if err != nil {
		return nil, fmt.Errorf("reading the answer of %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil,
			TooLarge(fmt.Sprintf("the answer of %s is larger than %d MiB, the limit for one answer", path, limit>>20))
	}
	if int64(len(b)) == got && got <= limit {
		return nil, TooLarge(fmt.Sprintf("the API server's answers to this command add up to more than %d MiB, the "+
			"limit for one command: narrow it (a namespace, a label selector)", MaxAnswers>>20))
	}
	return b, nil
}

// answer is how an answer is decoded: as a page of objects, and whether
// the command keeps it.
type answer struct{ page, kept bool }

// decode decodes b, the answer of path, into out once DecodeCost says it
// fits the budget.
func (c *Client) decode(path string, b []byte, how answer, out any) error {
	release, err := c.charge(path, b, how)
	if err != nil {
		return err
	}
	defer release()
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("decoding the answer of %s: %w", path, err)
	}
	return nil
}

// charge takes what decoding b will take from the budget, or says which
// bound it would pass; release gives back what an answer the command does
// not keep took, once it is decoded.
func (c *Client) charge(path string, b []byte, how answer) (release func(), err error) {
	cost := DecodeCost(b, how.page)
	if cost > MaxDecodedAnswer {
		return nil, TooLarge(fmt.Sprintf("the answer of %s would take more than %d MiB once decoded, the limit for "+
			"one answer", path, MaxDecodedAnswer>>20))
	}
	pool, bound, what := &c.budget.inFlight, int64(MaxDecodedInFlight), "the answers being read"
	if how.kept {
		pool, bound, what = &c.budget.decoded, MaxDecoded, "the answers this command keeps"
	}
	if got := take(pool, cost); got < cost {
		pool.Add(got)
		return nil, TooLarge(fmt.Sprintf("%s would take more than %d MiB once decoded, the limit for one command: "+
			"narrow it (a namespace, a label selector)", what, bound>>20))
	}
	if how.kept {
		return func() {}, nil
	}
	return func() { pool.Add(cost) }, nil
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
	return c.do(ctx, http.MethodPost, path, "", bytes.NewReader(body), MaxPost, answer{}, out)
}

// Put replaces the object at path with in (its resourceVersion makes it
// conditional) and decodes the answer into out.
func (c *Client) Put(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodPut, path, "", bytes.NewReader(body), MaxPost, answer{}, out)
}

// Get decodes the answer to a GET of path into out. Discovery documents
// and lists of RBAC objects can be large: up to MaxGet.
func (c *Client) Get(ctx context.Context, path string, out any) error {
	return c.do(ctx, http.MethodGet, path, "", nil, MaxGet, answer{kept: true}, out)
}

// GetAs is Get with another Accept (e.g. metadata-only lists), a page of
// objects: up to MaxList.
func (c *Client) GetAs(ctx context.Context, path, accept string, out any) error {
	return c.do(ctx, http.MethodGet, path, accept, nil, MaxList, answer{page: true, kept: true}, out)
}

// do sends one request and decodes a 2xx answer of at most limit bytes
// into out; other answers become an APIError from their Status.
func (c *Client) do(ctx context.Context, method, path, accept string, body io.Reader, limit int64, how answer,
	out any) error {
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
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := c.readAnswer(resp, path, limit)
	if err != nil {
		return err
	}
	if err := answerError(resp.StatusCode, path, b); err != nil {
		return err
	}
	return c.decode(path, b, how, out)
}

// answerError is the error of an answer that is not 2xx: a redirect is
// refused (it is not followed: it would carry the credentials elsewhere),
// anything else read from its Status.
func answerError(code int, path string, b []byte) error {
	switch code / 100 {
	case 2:
		return nil
	case 3:
		return fmt.Errorf("the API server answered %s with a redirect (%d): refusing to follow it, it would carry "+
			"the credentials elsewhere", path, code)
	}
	return statusError(code, b)
}

// maxMessage bounds the message of an API error that is printed.
const maxMessage = 1024

// statusError reads a Kubernetes Status body.
func statusError(code int, b []byte) error {
	var st struct {
		Reason  string `json:"reason"`
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &st) != nil || st.Message == "" {
		st.Message = strings.TrimSpace(string(b))
	}
	if len(st.Message) > maxMessage { // the server's to choose: one line of it
		cut := maxMessage
		for cut > 0 && !utf8.RuneStart(st.Message[cut]) {
			cut--
		}
		st.Message = st.Message[:cut] + "…"
	}
	return &APIError{Code: code, Reason: st.Reason, Message: st.Message}
}
