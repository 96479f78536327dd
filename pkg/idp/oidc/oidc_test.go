package oidc

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDiscoveryErrorTransient: a provider down or in trouble is a passing
// failure (a refresh token is kept, not called refused); a certificate
// that does not verify, a 4xx or another issuer are the settings' fault.
func TestDiscoveryErrorTransient(t *testing.T) {
	type server struct {
		url    string
		client *http.Client
	}
	serve := func(t *testing.T, status int, contentType, body string) server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", contentType)
			w.WriteHeader(status)
			fmt.Fprint(w, body)
		}))
		t.Cleanup(srv.Close)
		return server{srv.URL, srv.Client()}
	}
	tests := []struct {
		name          string
		server        func(t *testing.T) server
		wantTransient bool
	}{
		{"503", func(t *testing.T) server { return serve(t, 503, "text/plain", "down for maintenance") }, true},
		{"429", func(t *testing.T) server { return serve(t, 429, "text/plain", "slow down") }, true},
		{"a proxy's HTML page with 200", func(t *testing.T) server { return serve(t, 200, "text/html", "<html>sign in to the wifi</html>") }, true},
		{"an empty answer", func(t *testing.T) server { return serve(t, 200, "", "") }, true},
		{"the connection dropped", func(t *testing.T) server {
			srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }))
			t.Cleanup(srv.Close)
			return server{srv.URL, srv.Client()}
		}, true},
		{"nothing listens", func(t *testing.T) server {
			srv := httptest.NewServer(http.NotFoundHandler())
			srv.Close()
			return server{srv.URL, http.DefaultClient}
		}, true},
		{"404: a wrong issuer URL", func(t *testing.T) server { return serve(t, 404, "text/plain", "not found") }, false},
		{"another issuer", func(t *testing.T) server {
			return serve(t, 200, "application/json", `{"issuer":"https://elsewhere.example.com","authorization_endpoint":"https://elsewhere.example.com/auth","token_endpoint":"https://elsewhere.example.com/token","jwks_uri":"https://elsewhere.example.com/keys"}`)
		}, false},
		{"a certificate of an unknown authority", func(t *testing.T) server {
			srv := httptest.NewTLSServer(http.NotFoundHandler())
			t.Cleanup(srv.Close)
			return server{srv.URL, http.DefaultClient}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.server(t)
			_, err := Discover(context.Background(), s.url, "kube", s.client)
			require.Error(t, err)
			var de *DiscoveryError
			require.True(t, errors.As(err, &de), "%v", err)
			assert.Equal(t, tt.wantTransient, de.Transient(), "%v", err)
		})
	}
}
