package authn

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testissuer"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/jwtclaims"
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
		tok, err := jwtclaims.Decode(raw)
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

// FuzzDecodeJWTStructured: a header and a payload that are valid base64url
// of fuzzed bytes decode exactly when both are JSON objects, and the
// claim readers accept whatever decoded.
func FuzzDecodeJWTStructured(f *testing.F) {
	for _, s := range [][2]string{
		{`{"alg":"RS256","kid":"1"}`, `{"iss":"https://id.example.com","aud":["k8s"],"exp":1700000000,"groups":["dev"]}`},
		{`{"alg":"none"}`, `{"exp":"soon","aud":7,"groups":"solo"}`},
		{`{}`, `{"exp":1e308,"nested":{"a":[1,{"b":null}]}}`},
		{`[]`, `{}`}, {`{"alg":"RS256"}`, `null`}, {`{"a":1}`, `"str"`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, header, payload []byte) {
		raw := base64.RawURLEncoding.EncodeToString(header) + "." + base64.RawURLEncoding.EncodeToString(payload) + ".c2ln"
		tok, err := jwtclaims.Decode(raw)
		var h, p map[string]any
		objects := json.Unmarshal(header, &h) == nil && h != nil && json.Unmarshal(payload, &p) == nil && p != nil
		if objects != (err == nil) {
			t.Fatalf("header %q payload %q: decoded %v, error %v", header, payload, objects, err)
		}
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		_, _ = tok.Expiry()
		_ = tok.Audiences()
		_ = tok.Strings("groups")
	})
}

// FuzzCELPrediction: kube-apiserver's authenticator with CEL username,
// groups, uid and extra mappings and validation rules, given a signed token
// with any claims (iss, aud and exp kept valid): an identity or a refusal,
// never a panic, and an accepted identity has a username.
func FuzzCELPrediction(f *testing.F) {
	for _, s := range []string{
		`{"sub":"u-1","groups":["dev","ops"],"tenant":"acme"}`,
		`{"sub":"Zoë","groups":"solo","tenant":42,"org":{"team":"blue"}}`,
		`{"sub":"","groups":[1,true,null]}`,
		`{"sub":"super-admin","hd":"example.com"}`,
		`{"groups":[],"org":null}`,
	} {
		f.Add([]byte(s))
	}
	is := startIssuer(f)
	cfg, err := LoadConfig([]byte(`apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: "` + is.URL + `", audiences: [kube]}
  claimValidationRules:
  - {expression: 'claims.exp - claims.iat <= 3600', message: tokens live at most an hour}
  claimMappings:
    username: {expression: '"c:" + claims.sub + "/" + (has(claims.tenant) ? string(claims.tenant) : "none")'}
    groups: {expression: 'has(claims.groups) ? dyn(claims.groups).map(g, "x:" + string(g)) : []'}
    uid: {expression: 'claims.sub'}
    extra:
    - {key: example.com/team, valueExpression: 'has(claims.org) && has(claims.org.team) ? string(claims.org.team) : ""'}
  userValidationRules:
  - {expression: '!user.username.contains("admin")', message: no admins}
`))
	if err != nil {
		f.Fatal(err)
	}
	a := newAuthn(f, Options{Config: cfg, Keys: KeysUnverified})
	f.Fuzz(func(t *testing.T, claims []byte) {
		var c map[string]any
		if json.Unmarshal(claims, &c) != nil || c == nil {
			return
		}
		for k, v := range is.Claims("u-1", "kube", 10*time.Minute, nil) {
			if k == "iss" || k == "aud" || k == "exp" || k == "iat" || k == "nbf" {
				c[k] = v
			}
		}
		raw, err := is.Mint(c, testissuer.Valid)
		if err != nil {
			return
		}
		u, err := a.Authenticate(context.Background(), raw)
		if err == nil && u.GetName() == "" {
			t.Fatalf("accepted without a username: %q", claims)
		}
	})
}
