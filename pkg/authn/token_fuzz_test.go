package authn

import (
	"strings"
	"testing"
)

// FuzzDecodeJWT: any string decodes to a token or an error, never a panic;
// the claim readers accept whatever decoded.
func FuzzDecodeJWT(f *testing.F) {
	for _, seed := range []string{
		"eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJpc3MiOiJodHRwczovL2lkLmV4YW1wbGUuY29tIiwic3ViIjoiYWxpY2UiLCJhdWQiOlsiazhzIl0sImV4cCI6MTcwMDAwMDAwMCwiZW1haWwiOiJhQGIuYyIsImVtYWlsX3ZlcmlmaWVkIjp0cnVlLCJncm91cHMiOlsiZGV2Il19.c2ln",
		"eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.",
		"a.b.c", "..", "", "not a jwt", "eyJ9.eyJ9.x", "e30.e30.e30",
		"eyJhbGciOiJIUzI1NiJ9.eyJhdWQiOiJrOHMiLCJleHAiOiIxMCIsImdyb3VwcyI6ImRldiJ9.",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		tok, err := DecodeJWT(raw)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		if tok.Header == nil || tok.Claims == nil {
			t.Fatal("decoded without header or claims")
		}
		_, _ = tok.Expiry()
		_ = tok.Audiences()
		_ = tok.Strings("groups")
	})
}
