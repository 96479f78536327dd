package sudo

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// request refuses, before anything is sent, what no policy could allow.
func TestRequestValidate(t *testing.T) {
	for _, tt := range []struct {
		name    string
		o       RequestOptions
		wantErr string
	}{
		{"complete", RequestOptions{Role: "edit", Reason: "INC-1", For: 30 * time.Minute}, ""},
		{"no role", RequestOptions{Reason: "INC-1", For: time.Hour}, "--role is required"},
		{"no reason", RequestOptions{Role: "edit", For: time.Hour}, "--reason is required"},
		{"under a minute", RequestOptions{Role: "edit", Reason: "r", For: 59 * time.Second}, "at least 1m"},
		{"a fraction of a second", RequestOptions{Role: "edit", Reason: "r", For: time.Minute + time.Millisecond}, "whole seconds"},
	} {
		err := tt.o.Validate()
		if tt.wantErr == "" {
			assert.NoError(t, err, tt.name)
			continue
		}
		assert.ErrorContains(t, err, tt.wantErr, tt.name)
	}
}

func TestUntil(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	assert.Equal(t, "29m30s", until(now.Add(29*time.Minute+30*time.Second+200*time.Millisecond), now))
	assert.Equal(t, "ended", until(now, now))
	assert.Equal(t, "ended", until(now.Add(-time.Second), now))
}
