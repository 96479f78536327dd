package credspec

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestValidateAssertion: what a client assertion's settings may be, each
// refusal one line naming the flag.
func TestValidateAssertion(t *testing.T) {
	keyed := func(f func(*OIDC)) OIDC {
		o := OIDC{ClientAuthMethod: AuthPrivateKeyJWT, ClientKeyFile: "/k.pem"}
		f(&o)
		return o
	}
	for _, tt := range []struct {
		name    string
		oidc    OIDC
		wantErr string
	}{
		{"a key, the thumbprint as kid", keyed(func(*OIDC) {}), ""},
		{"a key with its registered kid", keyed(func(o *OIDC) { o.ClientKeyID = "robot-1" }), ""},
		{"a key without kid", keyed(func(o *OIDC) { o.ClientKeyID = "none" }), ""},
		{"a kid of the first and last printable characters", keyed(func(o *OIDC) { o.ClientKeyID = "!robot~" }), ""},
		{"a kid with DEL", keyed(func(o *OIDC) { o.ClientKeyID = "robot\x7f" }), "--" + FlagClientKeyID + " must be"},
		{"a kid of 256 characters", keyed(func(o *OIDC) { o.ClientKeyID = strings.Repeat("k", 256) }), ""},
		{"a kid of 257 characters", keyed(func(o *OIDC) { o.ClientKeyID = strings.Repeat("k", 257) }), "--" + FlagClientKeyID + " must be at most 256"},
		{"a kid with a space", keyed(func(o *OIDC) { o.ClientKeyID = "robot 1" }), "--" + FlagClientKeyID + " must be"},
		{"a kid with a control character", keyed(func(o *OIDC) { o.ClientKeyID = "robot\x1b[1" }), "--" + FlagClientKeyID + " must be"},
		{"a kid without a key", OIDC{ClientKeyID: "robot-1"}, "--" + FlagClientKeyID},
		{"no key file", OIDC{ClientAuthMethod: AuthPrivateKeyJWT}, "give --" + FlagClientKeyFile},
		{"a key and an assertion file", keyed(func(o *OIDC) { o.ClientAssertionFile = "/a" }), "not both"},
		{"a key and a secret", keyed(func(o *OIDC) { o.ClientSecretFile = "/s" }), "not both"},
		{"an audience that is not https", keyed(func(o *OIDC) { o.ClientAssertionAudience = "http://idp" }), "--" + FlagClientAssertionAud},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.oidc.RequestTimeout, tt.oidc.AuthTimeout, tt.oidc.PKCEMethod = time.Second, time.Second, PKCEAuto
			err := tt.oidc.Validate()
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}
