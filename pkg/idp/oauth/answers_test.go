package oauth

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Lifetime: a number or a string of one, nothing when absent or not
// positive, a year at most.
func TestLifetime(t *testing.T) {
	year := 365 * 24 * time.Hour
	for _, tt := range []struct {
		v    any
		want time.Duration
	}{
		{nil, 0}, {float64(300), 5 * time.Minute}, {json.Number("60"), time.Minute}, {"120", 2 * time.Minute},
		{float64(0), 0}, {float64(-5), 0}, {"soon", 0}, {true, 0}, {float64(1), time.Second},
		{year.Seconds() - 1, year - time.Second}, {year.Seconds(), year}, {1e300, year},
	} {
		assert.Equal(t, tt.want, Lifetime(tt.v), "%v", tt.v)
	}
}

// The error documents of the peers: OAuth's error and error_description,
// CloudSigma's error_type and error_message (one object, or a list whose
// first names its point).
func TestNewError(t *testing.T) {
	for _, tt := range []struct {
		name, body, ct    string
		code, description string
		contentType       string
	}{
		{name: "OAuth", body: `{"error":"invalid_grant","error_description":"expired"}`, code: "invalid_grant", description: "expired"},
		{name: "CloudSigma, one", body: `{"error_type":"permission","error_message":"no"}`, code: "permission", description: "no"},
		{name: "CloudSigma, a list with a point", body: `[{"error_type":"validation","error_message":"bad","error_point":"uuid"},{"error_type":"x"}]`,
			code: "validation", description: "bad (at uuid)"},
		{name: "CloudSigma, a message alone", body: `{"error_message":"down"}`, description: "down"},
		{name: "an empty list", body: `[]`, ct: "application/json; charset=utf-8", contentType: "application/json"},
		{name: "a list without a type", body: `[{"error_message":"m"}]`, ct: "application/json", contentType: "application/json"},
		{name: "HTML", body: `<html>`, ct: "text/html; charset=utf-8", contentType: "text/html"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newError(PeerIdP, "idp.example", 400, tt.ct, []byte(tt.body))
			assert.Equal(t, []string{tt.code, tt.description, tt.contentType}, []string{e.Code, e.Description, e.ContentType})
			assert.Equal(t, "idp.example", e.Host)
			assert.Equal(t, 400, e.Status)
		})
	}
}

// An error names the token endpoint's host, not its whole URL.
func TestErrorNamesTheHost(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":"invalid_client"}`)
	}))
	defer srv.Close()
	c := &Client{TokenURL: srv.URL + "/realms/x/token?secret=1", ClientID: "c", Retry: RetryPolicy{Attempts: 1, Sleep: noSleep}}
	_, err := c.Token(context.Background(), url.Values{"grant_type": {"client_credentials"}}, "")
	var e *Error
	require.ErrorAs(t, err, &e)
	u, _ := url.Parse(srv.URL)
	assert.Equal(t, u.Host, e.Host)
	assert.Equal(t, "invalid_client", e.Code)
}

// Revoke authenticates as the token endpoint does: a secret with HTTP
// Basic unless the method is post, in the form when it is, an assertion in
// the form, a public client by its client_id alone; the hint only when
// given. A public client may revoke at another origin (it sends nothing
// of its own).
func TestRevokeClientAuthentication(t *testing.T) {
	assertion := func(string) (string, error) { return "h.p.s", nil }
	for _, tt := range []struct {
		name      string
		client    Client
		hint      string
		otherHost bool
		basic     bool
		form      url.Values
	}{
		{name: "secret, default method: Basic", client: Client{ClientID: "robot", ClientSecret: "s3cret"}, hint: "refresh_token",
			basic: true, form: url.Values{"token": {"rt"}, "token_type_hint": {"refresh_token"}}},
		{name: "secret, basic", client: Client{ClientID: "robot", ClientSecret: "s3cret", AuthMethod: AuthBasic},
			basic: true, form: url.Values{"token": {"rt"}}},
		{name: "secret, post", client: Client{ClientID: "robot", ClientSecret: "s3cret", AuthMethod: AuthPost},
			form: url.Values{"token": {"rt"}, "client_id": {"robot"}, "client_secret": {"s3cret"}}},
		{name: "assertion", client: Client{ClientID: "robot", Assertion: assertion},
			form: url.Values{"token": {"rt"}, "client_id": {"robot"}, "client_assertion_type": {AssertionType}, "client_assertion": {"h.p.s"}}},
		{name: "public", client: Client{ClientID: "kubectl"}, form: url.Values{"token": {"rt"}, "client_id": {"kubectl"}}},
		{name: "public, another origin", client: Client{ClientID: "kubectl"}, otherHost: true,
			form: url.Values{"token": {"rt"}, "client_id": {"kubectl"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got url.Values
			var user, pass string
			var hasBasic bool
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				require.NoError(t, r.ParseForm())
				got = r.PostForm
				user, pass, hasBasic = r.BasicAuth()
			}))
			defer srv.Close()
			c := tt.client
			c.TokenURL = srv.URL + "/token"
			if tt.otherHost {
				c.TokenURL = "https://idp.example/token"
			}
			require.NoError(t, c.Revoke(context.Background(), srv.URL+"/revoke", "rt", tt.hint))
			assert.Equal(t, tt.form, got)
			assert.Equal(t, tt.basic, hasBasic)
			if tt.basic {
				assert.Equal(t, []string{"robot", "s3cret"}, []string{user, pass})
			}
		})
	}
}

// Transient: no answer, a 2xx that is no token, 429 and every 5xx; the
// other 4xx are refusals.
func TestTransient(t *testing.T) {
	for status, want := range map[int]bool{0: true, 200: true, 299: true, 400: false, 401: false, 428: false, 429: true,
		499: false, 500: true, 503: true, 599: true} {
		assert.Equal(t, want, (&Error{Status: status}).Transient(), "%d", status)
	}
}
