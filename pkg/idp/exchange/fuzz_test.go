package exchange

import (
	"strings"
	"testing"
	"time"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/oauth"
)

// FuzzCloudSigmaResponses: the impersonate answer gives a token with a
// bounded positive lifetime or a one-line error; error bodies (OAuth or
// CloudSigma's error_type lists) are FuzzTokenResponse's, in pkg/idp/oauth.
func FuzzCloudSigmaResponses(f *testing.F) {
	f.Add([]byte(`{"access_token":"tok","expires_in":900}`))
	f.Add([]byte(`{"impersonated_token":"tok","expires_in":"0"}`))
	f.Add([]byte(`{"impersonated_token":"tok","expires_in":-5}`))
	f.Add([]byte(`[{"error_type":"notexist","error_message":"User does not exist\nin zrh","error_point":null}]`))
	f.Add([]byte(`{"error_type":"permission","error_message":"no","error_point":{"a":1}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, body []byte) {
		token, lifetime, err := parseImpersonation(body)
		if err == nil {
			now := time.Now()
			exp := oauth.Expiry(token, lifetime, now, defaultImpersonatedLifetime)
			if token == "" || !exp.After(now) || exp.After(now.Add(366*24*time.Hour)) {
				t.Fatalf("token %q expiry %v", token, exp)
			}
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("multi-line error: %q", err)
		}
	})
}
