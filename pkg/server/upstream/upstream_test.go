package upstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type countingRT struct {
	n  int
	rt http.RoundTripper
}

func (c *countingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n++
	return c.rt.RoundTrip(r)
}

// Upgrade requests take the HTTP/1.1 transport (HTTP/2 cannot carry an
// Upgrade: the e2e test found SPDY exec failing over the default one).
func TestUpgradeSplit(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	for _, tc := range []struct {
		name                string
		upgrade             string
		wantPlain, wantUpgr int
	}{
		{"plain request", "", 1, 0},
		{"SPDY upgrade", "SPDY/3.1", 0, 1},
		{"WebSocket upgrade", "websocket", 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plain, upgr := &countingRT{rt: http.DefaultTransport}, &countingRT{rt: http.DefaultTransport}
			req, _ := http.NewRequest("GET", srv.URL, nil)
			if tc.upgrade != "" {
				req.Header.Set("Upgrade", tc.upgrade)
			}
			resp, err := UpgradeSplit{Plain: plain, Upgrade: upgr}.RoundTrip(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tc.wantPlain, plain.n)
			assert.Equal(t, tc.wantUpgr, upgr.n)
		})
	}
}

// The readiness answer is reused: probes cannot make the proxy send an
// upstream request each.
func TestReadyCheckIsReused(t *testing.T) {
	var n int
	var mu sync.Mutex
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { mu.Lock(); n++; mu.Unlock() }))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	ready := ReadyCheck(u, http.DefaultTransport, func() error { return nil }, time.Minute)
	for range 20 {
		require.NoError(t, ready(context.Background()))
	}
	assert.Equal(t, 1, n)
}
