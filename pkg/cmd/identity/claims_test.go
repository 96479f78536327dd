package identity

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/kubeapi"
	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/kubecode"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/kubecode/fake"
)

// fakeWhoAmI answers claims --compare's SelfSubjectReview.
type fakeWhoAmI struct {
	user *authnv1.UserInfo
	err  error
}

func (f fakeWhoAmI) WhoAmI(context.Context) (*authnv1.UserInfo, string, error) {
	return f.user, "v1", f.err
}

func unsignedToken(claims map[string]any) string {
	enc := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
	return enc(map[string]string{"alg": "RS256"}) + "." + enc(claims) + ".sig"
}

// TestClaimsRun drives claims' Run with a fake of kube-apiserver's code and
// a fake API server for --compare: what it asks the seam, the table, the
// differences and the exit status.
func TestClaimsRun(t *testing.T) {
	alice := &authnv1.UserInfo{Username: "oidc:alice@example.com", Groups: []string{"oidc:dev", "system:authenticated"}}
	predicted := kubecode.Prediction{Rules: `legacy --oidc-* flags: username = "oidc:" + claim "email"`, SignatureVerified: true,
		Signature: "verified against the trusted issuer's keys", Predicted: kubecode.Identity{Username: "oidc:alice@example.com", Groups: []string{"oidc:dev"}}}
	for _, tt := range []struct {
		name    string
		server  *fakeWhoAmI
		want    []string
		wantErr string
	}{
		{name: "as predicted", want: []string{`Signature\s+verified against the trusted issuer's keys`, `PREDICTED\s+legacy --oidc-\* flags`, `username\s+oidc:alice@example\.com`, `groups\s+\[oidc:dev\]`}},
		{name: "--compare, the server agrees", server: &fakeWhoAmI{user: alice}, want: []string{`API SERVER \(authentication\.k8s\.io/v1\)`, `differences\s+none`}},
		{name: "--compare, the server maps otherwise", server: &fakeWhoAmI{user: &authnv1.UserInfo{Username: "alice@example.com", Groups: []string{"system:authenticated"}}},
			want: []string{`DIFFERENCE\s+username: predicted "oidc:alice@example.com", the API server says "alice@example.com"`}, wantErr: "the prediction differs from the API server in 2 place(s)"},
		{name: "--compare, the server refuses the token", server: &fakeWhoAmI{err: &kubeapi.APIError{Code: 401}},
			want: []string{`API SERVER \(refused \(401\)\)`}, wantErr: "differs from the API server"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code := &fake.Code{Prediction: predicted}
			streams, _, out, _ := genericiooptions.NewTestIOStreams()
			token := unsignedToken(map[string]any{"iss": "https://dex.example.com", "sub": "alice", "email": "alice@example.com"})
			o := &ClaimsOptions{Output: &cmdutil.OutputFlags{}, Compare: tt.server != nil, IOStreams: streams,
				ReadToken: func(context.Context) (string, error) { return token, nil }, global: cmdutil.NewGlobalOptions(code, nil)}
			o.OIDC.IssuerURL = "https://dex.example.com"
			if tt.server != nil {
				o.Server = tt.server
			}
			err := o.Run(context.Background())
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
			} else {
				require.NoError(t, err)
			}
			for _, w := range tt.want {
				assert.Regexp(t, w, out.String())
			}
			require.Len(t, code.Predicted, 1)
			assert.Equal(t, token, code.Predicted[0].Token)
			assert.True(t, code.Predicted[0].Trusted, "an issuer named by the user is trusted")
			assert.Equal(t, "https://dex.example.com", code.Predicted[0].OIDC.IssuerURL)
			assert.False(t, strings.Contains(out.String(), token), "the token is never printed")
		})
	}
}
