package login

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSameHostGETOnly: a provider's redirect is followed for a GET to the
// same host and scheme only: never to another host, never from https to
// http (the request headers and the documents would cross in clear).
func TestSameHostGETOnly(t *testing.T) {
	req := func(method, u string) *http.Request {
		parsed, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		return &http.Request{Method: method, URL: parsed}
	}
	first := []*http.Request{req(http.MethodGet, "https://idp.example.com/.well-known/openid-configuration")}
	for _, tt := range []struct {
		name   string
		next   *http.Request
		via    []*http.Request
		follow bool
	}{
		{"the same host and scheme", req(http.MethodGet, "https://idp.example.com/realms/x/.well-known/openid-configuration"), first, true},
		{"another host", req(http.MethodGet, "https://evil.example.com/x"), first, false},
		{"https to http", req(http.MethodGet, "http://idp.example.com/x"), first, false},
		{"a POST", req(http.MethodPost, "https://idp.example.com/token"), first, false},
		{"the sixth hop", req(http.MethodGet, "https://idp.example.com/x"), []*http.Request{first[0], first[0], first[0], first[0], first[0]}, false},
		{"the fifth hop", req(http.MethodGet, "https://idp.example.com/x"), []*http.Request{first[0], first[0], first[0], first[0]}, true},
	} {
		err := sameHostGETOnly(tt.next, tt.via)
		if tt.follow {
			assert.NoError(t, err, tt.name)
		} else {
			assert.ErrorIs(t, err, http.ErrUseLastResponse, tt.name)
		}
	}
}
