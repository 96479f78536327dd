package exchange

import (
	"strings"
	"testing"
	"time"
)

// FuzzTokenResponse: any answer of a token endpoint (status, content type,
// body) gives a token with a positive lifetime or a one-line error.
func FuzzTokenResponse(f *testing.F) {
	f.Add(200, "application/json", []byte(`{"access_token":"at","token_type":"Bearer","expires_in":3600,"refresh_token":"rt"}`))
	f.Add(200, "application/json", []byte(`{"access_token":"at","expires_in":"3600","issued_token_type":"urn:ietf:params:oauth:token-type:access_token"}`))
	f.Add(200, "application/json", []byte(`{"access_token":"at","expires_in":1e300}`))
	f.Add(400, "application/json", []byte(`{"error":"invalid_grant","error_description":"Token is not active\nat all"}`))
	f.Add(403, "application/json", []byte(`{"error":"access_denied"}`))
	f.Add(502, "text/html", []byte(`<html><body>Bad gateway</body></html>`))
	f.Add(200, "application/json", []byte(`{"access_token":`))
	f.Add(429, "", []byte(``))
	f.Fuzz(func(t *testing.T, status int, contentType string, body []byte) {
		tr, err := parseTokenResponse(&response{status: status, contentType: contentType, body: body})
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		if tr.AccessToken == "" {
			t.Fatal("a token response without a token")
		}
		if l := tr.lifetime(time.Minute); l <= 0 || l > maxLifetime {
			t.Fatalf("lifetime %v", l)
		}
	})
}

// FuzzCloudSigmaResponses: the impersonate answer gives a token with a
// bounded positive lifetime or a one-line error; error bodies (OAuth or
// CloudSigma's error_type lists) are described in one line.
func FuzzCloudSigmaResponses(f *testing.F) {
	f.Add([]byte(`{"access_token":"tok","expires_in":900}`))
	f.Add([]byte(`{"impersonated_token":"tok","expires_in":"0"}`))
	f.Add([]byte(`{"impersonated_token":"tok","expires_in":-5}`))
	f.Add([]byte(`[{"error_type":"notexist","error_message":"User does not exist\nin zrh","error_point":null}]`))
	f.Add([]byte(`{"error_type":"permission","error_message":"no","error_point":{"a":1}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, body []byte) {
		tr, err := parseImpersonation(body)
		if err == nil {
			now := time.Now()
			exp := expiryOr(tr, now, defaultImpersonatedLifetime)
			if tr.AccessToken == "" || !exp.After(now) || exp.After(now.Add(maxLifetime+time.Minute)) {
				t.Fatalf("token %q expiry %v", tr.AccessToken, exp)
			}
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("multi-line error: %q", err)
		}
		if d := describeBody(&response{status: 400, contentType: "application/json", body: body}); strings.Contains(d, "\n") {
			t.Fatalf("multi-line description: %q", d)
		}
	})
}
