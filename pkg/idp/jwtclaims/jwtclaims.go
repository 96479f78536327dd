// Package jwtclaims decodes a JWT for display, verifying nothing: pkg/server/authn
// verifies with kube-apiserver's own authenticator. It imports nothing but
// the standard library, so every command may decode a token.
package jwtclaims

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Token is a decoded JWT. Decoding verifies nothing: pkg/server/authn does.
type Token struct {
	Header map[string]any `json:"header"`
	Claims map[string]any `json:"claims"`
}

// Decode splits and decodes a compact JWS.
func Decode(raw string) (*Token, error) {
	parts := strings.Split(strings.TrimSpace(raw), ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("not a JWT: %d parts separated by dots, want 3", len(parts))
	}
	t := &Token{}
	for i, dst := range []*map[string]any{&t.Header, &t.Claims} {
		b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[i], "="))
		if err != nil {
			return nil, fmt.Errorf("not a JWT: part %d is not base64url: %v", i+1, err)
		}
		if err := json.Unmarshal(b, dst); err != nil {
			return nil, fmt.Errorf("not a JWT: part %d is not a JSON object: %v", i+1, err)
		}
		if *dst == nil { // JSON null decodes without an error, into no map
			return nil, fmt.Errorf("not a JWT: part %d is null, not a JSON object", i+1)
		}
	}
	return t, nil
}

// String returns a string claim.
func (t *Token) String(name string) string {
	s, _ := t.Claims[name].(string)
	return s
}

// Expiry is the exp claim.
func (t *Token) Expiry() (time.Time, bool) {
	f, ok := t.Claims["exp"].(float64)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(int64(f), 0).UTC(), true
}

// Audiences is the aud claim, a string or a list.
func (t *Token) Audiences() []string { return stringsOf(t.Claims["aud"]) }

// Strings returns a claim that is a string or a list of strings (as
// kube-apiserver reads a groups claim).
func (t *Token) Strings(name string) []string { return stringsOf(t.Claims[name]) }

func stringsOf(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, i := range x {
			if s, ok := i.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
