package kubeapi

import (
	"context"
	"net/http"
	"sync/atomic"
)

// Requests are counted in one place, the Client's transport: every request
// a Client sends adds one to the Client's total (Client.Requests) and to
// each RequestCount of its context (CountRequests), so that a piece of
// work (one namespace's matrix, a list's reviews) knows what it cost
// however many clients and goroutines it used, and nothing threads a
// number through the calls.

// RequestCount is the number of requests sent with one context.
type RequestCount struct {
	n     atomic.Int64
	outer *RequestCount
}

// N is the number counted so far.
func (r *RequestCount) N() int { return int(r.n.Load()) }

type countKey struct{}

// CountRequests returns ctx with a new RequestCount: each request sent
// through a Client with that context, or one derived from it, adds one to
// it (and to the counts of the contexts ctx derives from).
func CountRequests(ctx context.Context) (context.Context, *RequestCount) {
	outer, _ := ctx.Value(countKey{}).(*RequestCount)
	r := &RequestCount{outer: outer}
	return context.WithValue(ctx, countKey{}, r), r
}

// counting is the transport that counts: the Client's total and the
// request's context's counts.
type counting struct {
	next  http.RoundTripper
	total *atomic.Int64
}

func (t counting) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := req.Context().Err(); err != nil {
		if req.Body != nil {
			_ = req.Body.Close() // a RoundTripper closes the body, sent or not
		}
		return nil, err // not sent, not counted
	}
	t.total.Add(1)
	for r, _ := req.Context().Value(countKey{}).(*RequestCount); r != nil; r = r.outer {
		r.n.Add(1)
	}
	return t.next.RoundTrip(req)
}
