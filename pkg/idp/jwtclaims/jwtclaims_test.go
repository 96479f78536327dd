package jwtclaims

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecode(t *testing.T) {
	seg := func(v any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	tok, err := Decode(seg(map[string]any{"alg": "RS256", "kid": "k"}) + "." + seg(map[string]any{"exp": 1700000000, "aud": []any{"a", "b"}, "groups": "one"}) + ".sig")
	require.NoError(t, err)
	exp, ok := tok.Expiry()
	assert.True(t, ok)
	assert.Equal(t, int64(1700000000), exp.Unix())
	assert.Equal(t, []string{"a", "b"}, tok.Audiences())
	assert.Equal(t, []string{"one"}, tok.Strings("groups"))
	assert.Nil(t, tok.Strings("missing"))
}

func TestDecodeErrors(t *testing.T) {
	for in, want := range map[string]string{"abc": "1 parts separated by dots, want 3", "a.b.c": "not base64url", "e30.YQ.c": "not a JSON object",
		"e30.bnVsbA.c": "part 2 is null, not a JSON object", "bnVsbA.e30.c": "part 1 is null"} {
		_, err := Decode(in)
		assert.ErrorContains(t, err, want, in)
	}
}
