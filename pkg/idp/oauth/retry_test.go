package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each field given replaces its default alone; none given is the default.
func TestRetryPolicyDefaults(t *testing.T) {
	d := RetryPolicy{}.withDefaults()
	assert.Equal(t, []any{4, 250 * time.Millisecond, 4 * time.Second, 20 * time.Second},
		[]any{d.Attempts, d.Base, d.Max, d.Budget})
	for _, tt := range []struct {
		name string
		p    RetryPolicy
		want [4]any
	}{
		{"attempts", RetryPolicy{Attempts: 1}, [4]any{1, 250 * time.Millisecond, 4 * time.Second, 20 * time.Second}},
		{"base", RetryPolicy{Base: time.Second}, [4]any{4, time.Second, 4 * time.Second, 20 * time.Second}},
		{"max", RetryPolicy{Max: time.Second}, [4]any{4, 250 * time.Millisecond, time.Second, 20 * time.Second}},
		{"budget", RetryPolicy{Budget: time.Second}, [4]any{4, 250 * time.Millisecond, 4 * time.Second, time.Second}},
	} {
		p := tt.p.withDefaults()
		assert.Equal(t, tt.want, [4]any{p.Attempts, p.Base, p.Max, p.Budget}, tt.name)
	}
	j := RetryPolicy{}.withDefaults().Jitter
	assert.Equal(t, time.Duration(0), j(0), "no room, no wait")
	assert.Equal(t, time.Duration(0), j(-time.Second))
	for range 200 {
		v := j(time.Nanosecond)
		assert.True(t, v == 0 || v == time.Nanosecond, "within [0, max]: %s", v)
	}
	sleep := RetryPolicy{}.withDefaults().Sleep
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, sleep(ctx, time.Hour), context.Canceled, "the default sleep ends with the context")
	assert.NoError(t, sleep(context.Background(), time.Millisecond))
}

// delay: Retry-After wins; else the backoff doubles from Base up to Max
// (and Max when the shift overflows), jittered.
func TestRetryDelay(t *testing.T) {
	p := RetryPolicy{Base: time.Second, Max: 5 * time.Second, Jitter: func(m time.Duration) time.Duration { return m }}.withDefaults()
	for _, tt := range []struct {
		n          int
		retryAfter time.Duration
		want       time.Duration
	}{
		{0, 0, time.Second}, {1, 0, 2 * time.Second}, {2, 0, 4 * time.Second}, {3, 0, 5 * time.Second},
		{70, 0, 5 * time.Second}, // the shift overflows
		{0, 7 * time.Second, 7 * time.Second}, {0, -time.Second, time.Second},
	} {
		assert.Equal(t, tt.want, p.delay(tt.n, tt.retryAfter), "attempt %d, Retry-After %s", tt.n, tt.retryAfter)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		v    string
		want time.Duration
	}{
		{"", 0}, {"3", 3 * time.Second}, {" 0 ", 0}, {"-3", 0}, {"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
	} {
		assert.Equal(t, tt.want, parseRetryAfter(tt.v, now), "%q", tt.v)
	}
}

// run: a transient failure is retried up to Attempts, each retry told to
// Observe; a refusal or a plain error ends it at once; the budget stops a
// retry that would pass it; the context ends it.
func TestRetryRun(t *testing.T) {
	transient := &Error{Status: http.StatusServiceUnavailable}
	refused := &Error{Status: http.StatusBadRequest, Code: "invalid_grant"}
	for _, tt := range []struct {
		name      string
		p         RetryPolicy
		answers   []error
		calls     int
		observed  []int
		slept     []time.Duration
		wantErr   string
		wantIsErr error
	}{
		{name: "first try", answers: []error{nil}, calls: 1},
		{name: "twice transient, then success", answers: []error{transient, transient, nil}, calls: 3, observed: []int{1, 2},
			slept: []time.Duration{time.Second, 2 * time.Second}},
		{name: "a refusal is not retried", answers: []error{refused}, calls: 1, wantIsErr: refused},
		{name: "a plain error is not retried", answers: []error{errors.New("bad URL")}, calls: 1, wantErr: "bad URL"},
		{name: "all attempts transient", answers: []error{transient, transient, transient, transient, nil}, calls: 4,
			observed: []int{1, 2, 3}, slept: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second},
			wantErr: "(after 4 attempts)", wantIsErr: transient},
		{name: "one attempt", p: RetryPolicy{Attempts: 1}, answers: []error{transient, nil}, calls: 1,
			wantErr: "(after 1 attempts)"},
		{name: "the budget", p: RetryPolicy{Budget: 1500 * time.Millisecond}, answers: []error{transient, transient, nil}, calls: 2,
			observed: []int{1, 2}, slept: []time.Duration{time.Second},
			wantErr: "gave up: the next retry, in 2s, would pass the 1.5s retry budget", wantIsErr: transient},
		{name: "a budget beyond every wait", p: RetryPolicy{Budget: 3*time.Second + time.Minute},
			answers: []error{transient, transient, nil}, calls: 3, observed: []int{1, 2}, slept: []time.Duration{time.Second, 2 * time.Second}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.p
			p.Base, p.Max = time.Second, 8*time.Second
			p.Jitter = func(m time.Duration) time.Duration { return m }
			var slept []time.Duration
			p.Sleep = func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }
			var observed []int
			p.Observe = func(n int, err error) { observed = append(observed, n); assert.Error(t, err) }
			calls := 0
			err := p.run(context.Background(), func() (time.Duration, error) {
				calls++
				return 0, tt.answers[calls-1]
			})
			assert.Equal(t, tt.calls, calls)
			assert.Equal(t, tt.observed, observed)
			assert.Equal(t, tt.slept, slept)
			if tt.wantErr == "" && tt.wantIsErr == nil {
				assert.NoError(t, err)
				return
			}
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
			}
			if tt.wantIsErr != nil {
				assert.ErrorIs(t, err, tt.wantIsErr)
			}
		})
	}
	t.Run("the context ends it", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		err := RetryPolicy{Sleep: noSleep}.run(ctx, func() (time.Duration, error) { cancel(); return 0, transient })
		assert.ErrorIs(t, err, context.Canceled)
	})
	t.Run("a sleep cut short ends it", func(t *testing.T) {
		stop := fmt.Errorf("interrupted")
		n := 0
		err := RetryPolicy{Sleep: func(context.Context, time.Duration) error { return stop }}.run(context.Background(),
			func() (time.Duration, error) { n++; return 0, transient })
		assert.ErrorIs(t, err, stop)
		assert.Equal(t, 1, n)
	})
	t.Run("Retry-After is the wait", func(t *testing.T) {
		var slept []time.Duration
		n := 0
		err := RetryPolicy{Sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }}.run(
			context.Background(), func() (time.Duration, error) {
				n++
				if n == 1 {
					return 3 * time.Second, transient
				}
				return 0, nil
			})
		require.NoError(t, err)
		assert.Equal(t, []time.Duration{3 * time.Second}, slept)
	})
}
