package kubeapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

// TestCountRequests: what the transport sent is counted once per request
// in the client's total and in every count of the request's context and
// of the contexts it derives from, whichever client and goroutine sent
// it; a request that reaches the server and fails counts, one refused
// before it is sent (a cancelled context) counts in neither.
func TestCountRequests(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			http.Error(w, `{"kind":"Status","code":500}`, http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	a, err := NewClient(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	b, err := NewClient(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	var out map[string]any

	outerCtx, outer := CountRequests(context.Background())
	innerCtx, inner := CountRequests(outerCtx)
	_, sibling := CountRequests(outerCtx)

	require.NoError(t, a.Get(context.Background(), "/uncounted", &out))
	require.NoError(t, a.Get(outerCtx, "/outer", &out))
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() { assert.NoError(t, b.Get(innerCtx, "/inner", &out)) })
	}
	wg.Wait()
	assert.Error(t, a.Get(innerCtx, "/fail", &out))
	cancelled, cancel := context.WithCancel(innerCtx)
	cancel()
	assert.Error(t, a.Get(cancelled, "/cancelled", &out))

	for _, tc := range []struct {
		name      string
		got, want int
	}{
		{"the inner piece of work: both clients, ten goroutines, the failed request", inner.N(), 11},
		{"the outer one: its own and the inner's", outer.N(), 12},
		{"a sibling of the inner one: none of them", sibling.N(), 0},
		{"client a: with and without a count", a.Requests(), 3},
		{"client b", b.Requests(), 10},
	} {
		assert.Equal(t, tc.want, tc.got, tc.name)
	}
}

// TestNewClientLeavesTheDefaultClient: client-go hands out
// http.DefaultClient for a plain-HTTP configuration without credentials;
// the counting transport and the refused redirects are set on a client of
// our own, not on the process's default.
func TestNewClientLeavesTheDefaultClient(t *testing.T) {
	_, err := NewClient(&rest.Config{Host: "http://127.0.0.1:1"})
	require.NoError(t, err)
	assert.Nil(t, http.DefaultClient.Transport, "http.DefaultClient's transport")
	assert.Nil(t, http.DefaultClient.CheckRedirect, "http.DefaultClient's redirect policy")
}
