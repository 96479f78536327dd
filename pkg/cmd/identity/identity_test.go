package identity

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/session"
)

// fakeServer answers SelfSubjectReview with user (what kube-apiserver
// answers is test/e2e's; these tests check what Run does with it).
type fakeServer struct{ user authnv1.UserInfo }

func (f fakeServer) WhoAmI(context.Context) (*authnv1.UserInfo, string, error) {
	u := f.user
	return &u, "v1", nil
}

func (f fakeServer) SelfSubjectReview(ctx context.Context) (*authnv1.SelfSubjectReview, string, error) {
	ssr := &authnv1.SelfSubjectReview{Status: authnv1.SelfSubjectReviewStatus{UserInfo: f.user}}
	ssr.APIVersion, ssr.Kind = "authentication.k8s.io/v1", "SelfSubjectReview"
	return ssr, "v1", nil
}

func testGlobal() *cmdutil.GlobalOptions {
	return &cmdutil.GlobalOptions{Getenv: func(string) string { return "" }, IsTerminal: func(any) bool { return false }}
}

var alice = authnv1.UserInfo{Username: "alice@example.com", Groups: []string{"dev", "system:authenticated"}}

// TestWhoAmIRun: the table, and with -o json kubectl auth whoami's own
// object (the SelfSubjectReview), the cached token's description under
// metadata.annotations only.
func TestWhoAmIRun(t *testing.T) {
	expiry := time.Date(2026, 11, 25, 18, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name   string
		format string
		ts     *session.TokenSource
		want   string
	}{
		{name: "table", want: "Username"},
		{name: "json, another plugin's user: exactly kubectl's", format: "json", want: `{
    "kind": "SelfSubjectReview",
    "apiVersion": "authentication.k8s.io/v1",
    "metadata": {},
    "status": {
        "userInfo": {
            "username": "alice@example.com",
            "groups": [
                "dev",
                "system:authenticated"
            ]
        }
    }
}
`},
		{name: "json, this plugin's user: annotations", format: "json", ts: &session.TokenSource{Issuer: "https://dex.example.com", ClientID: "kube", GrantType: "authcode", Storage: "keyring", Cached: true, Expiry: expiry},
			want: `"annotations": {
            "kubectl-impersonate.io/token-cache": "keyring",
            "kubectl-impersonate.io/token-client": "kube",
            "kubectl-impersonate.io/token-expiry": "2026-11-25T18:00:00Z",
            "kubectl-impersonate.io/token-grant": "authcode",
            "kubectl-impersonate.io/token-issuer": "https://dex.example.com"
        }`},
		{name: "jsonpath, as kubectl's scripts use it", format: "jsonpath={.status.userInfo.username}", want: "alice@example.com"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			streams, _, out, _ := genericiooptions.NewTestIOStreams()
			o := &WhoAmIOptions{Output: &cmdutil.OutputFlags{Format: tt.format}, IOStreams: streams, global: testGlobal(), client: fakeServer{user: alice},
				tokenSource: func(context.Context) *session.TokenSource { return tt.ts }}
			require.NoError(t, o.Run(context.Background()))
			switch tt.name {
			case "table":
				assert.Regexp(t, `(?m)^Username +alice@example\.com$`, out.String())
				assert.Regexp(t, `(?m)^Groups +\[dev system:authenticated\]$`, out.String())
			case "json, another plugin's user: exactly kubectl's":
				assert.Equal(t, tt.want, out.String())
			default:
				assert.Contains(t, out.String(), tt.want)
			}
		})
	}
}

func TestGroupsRun(t *testing.T) {
	seg := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
	token := seg(map[string]string{"alg": "RS256"}) + "." + seg(map[string]any{"groups": []string{"dev", "ops"}}) + ".sig"
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	o := &GroupsOptions{GroupsClaim: "groups", Output: &cmdutil.OutputFlags{Format: "json"}, IOStreams: streams, global: testGlobal(),
		client: fakeServer{user: alice}, token: func(context.Context) (string, error) { return token, nil }}
	require.NoError(t, o.Run(context.Background()))
	var rows []GroupRow
	require.NoError(t, json.Unmarshal(out.Bytes(), &rows))
	assert.Equal(t, []GroupRow{{Group: "dev", InToken: true, FromServer: true}, {Group: "ops", InToken: true},
		{Group: "system:authenticated", FromServer: true}}, rows)
}
