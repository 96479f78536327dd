package httpguard

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBounded(t *testing.T) {
	for _, tt := range []struct {
		name    string
		size    int
		chunked bool
		wantErr bool
	}{
		{"small", 100, false, false},
		{"exactly the limit", MaxAnswerSize, false, false},
		{"one byte over, with Content-Length", MaxAnswerSize + 1, false, true},
		{"over, chunked", 4 * MaxAnswerSize, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.chunked {
					w.(http.Flusher).Flush()
				}
				_, _ = w.Write([]byte(strings.Repeat("x", tt.size)))
			}))
			defer s.Close()
			c := &http.Client{Transport: Bounded(http.DefaultTransport)}
			resp, err := c.Get(s.URL)
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			if tt.wantErr {
				assert.ErrorIs(t, err, ErrAnswerTooLarge)
			} else {
				assert.NoError(t, err)
			}
		})
	}
}

func TestRateLimited(t *testing.T) {
	var hits atomic.Int64
	var fail atomic.Bool
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if fail.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, `{"keys":[]}`)
	}))
	defer s.Close()
	now := time.Now()
	l := RateLimited(http.DefaultTransport, 10*time.Second).(*rateLimited)
	l.now = func() time.Time { return now }
	c := &http.Client{Transport: l}
	get := func(auth string) (int, error) {
		req, _ := http.NewRequest("GET", s.URL+"/keys", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 {
			assert.Equal(t, `{"keys":[]}`, string(b))
		}
		return resp.StatusCode, nil
	}
	for range 50 {
		code, err := get("")
		require.NoError(t, err)
		assert.Equal(t, 200, code)
	}
	assert.Equal(t, int64(1), hits.Load(), "50 fetches within the interval: one request")
	_, _ = get("Bearer x")
	assert.Equal(t, int64(2), hits.Load(), "a request with credentials always goes through")

	now = now.Add(11 * time.Second)
	fail.Store(true)
	code, err := get("")
	require.NoError(t, err)
	assert.Equal(t, 503, code)
	assert.Equal(t, int64(3), hits.Load())
	for range 20 {
		code, err := get("")
		require.NoError(t, err, "the last good copy is served after a failure")
		assert.Equal(t, 200, code)
	}
	assert.Equal(t, int64(3), hits.Load(), "a failing issuer is not asked again within the interval")

	fresh := RateLimited(http.DefaultTransport, 10*time.Second)
	c = &http.Client{Transport: fresh}
	_, err = c.Get(s.URL + "/other")
	require.NoError(t, err)
	_, err = c.Get(s.URL + "/other")
	assert.True(t, errors.Is(err, ErrRateLimited), "no good copy yet, asked again too soon: %v", err)
	assert.Equal(t, int64(4), hits.Load())
}

func TestNoNetwork(t *testing.T) {
	var hits atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer s.Close()
	_, err := NoNetwork().Get(s.URL)
	assert.ErrorIs(t, err, ErrNoNetwork)
	assert.Zero(t, hits.Load())
}
