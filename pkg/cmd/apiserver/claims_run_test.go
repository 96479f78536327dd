package apiserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testissuer"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/inspect"
	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/kubeapi"
)

// fakeServer answers claims --compare's SelfSubjectReview.
type fakeServer struct {
	user *authnv1.UserInfo
	err  error
}

func (f fakeServer) WhoAmI(context.Context) (*authnv1.UserInfo, string, error) {
	return f.user, "v1", f.err
}

// TestClaimsRun drives claims' Run with kube-apiserver's real authenticator
// (the test issuer's keys) and a fake API server for --compare: the
// prediction, the signature verdict and the differences, each as the table
// shows them, and the exit status.
func TestClaimsRun(t *testing.T) {
	is, err := testissuer.Start()
	require.NoError(t, err)
	t.Cleanup(is.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, is.CAPEM(), 0o600))
	mint := func(tamper testissuer.Tamper) string {
		tok, err := is.Mint(is.Claims("sub-1", "kube", time.Hour, map[string]any{"email": "alice@example.com", "email_verified": true, "groups": []any{"dev"}}), tamper)
		require.NoError(t, err)
		return tok
	}
	alice := &authnv1.UserInfo{Username: "oidc:alice@example.com", Groups: []string{"oidc:dev", "system:authenticated"}}
	for _, tt := range []struct {
		name    string
		token   string
		server  *fakeServer
		want    []string
		wantErr string
	}{
		{name: "verified, as predicted", token: mint(testissuer.Valid), want: []string{`Signature\s+verified against the trusted issuer's keys`, `PREDICTED\s+legacy --oidc-\* flags: username = "oidc:" \+ claim "email"`, `username\s+oidc:alice@example\.com`, `groups\s+\[oidc:dev\]`}},
		{name: "--compare, the server agrees", token: mint(testissuer.Valid), server: &fakeServer{user: alice}, want: []string{`API SERVER \(authentication\.k8s\.io/v1\)`, `differences\s+none`}},
		{name: "--compare, the server maps otherwise", token: mint(testissuer.Valid), server: &fakeServer{user: &authnv1.UserInfo{Username: "alice@example.com", Groups: []string{"system:authenticated"}}},
			want: []string{`DIFFERENCE\s+\S`}, wantErr: "the prediction differs from the API server"},
		{name: "--compare, the server refuses the token", token: mint(testissuer.Valid), server: &fakeServer{err: &kubeapi.APIError{Code: 401}},
			want: []string{`API SERVER \(refused \(401\)\)`}, wantErr: "differs from the API server"},
		{name: "a bad signature", token: mint(testissuer.BadSignature), want: []string{`Signature\s+INVALID`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut strings.Builder
			o := &inspect.ClaimsOptions{Output: &cmdutil.OutputFlags{}, Compare: tt.server != nil,
				IOStreams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
				ReadToken: func(context.Context) (string, error) { return tt.token, nil }}
			o.OIDC.IssuerURL, o.OIDC.ClientIDs, o.OIDC.CAFile = is.URL, []string{"kube"}, ca
			o.OIDC.UsernameClaim, o.OIDC.UsernamePrefix, o.OIDC.GroupsClaim, o.OIDC.GroupsPrefix = "email", "oidc:", "groups", "oidc:"
			if tt.server != nil {
				o.Server = tt.server
			}
			err := Code{}.Claims(context.Background(), o)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
			} else {
				require.NoError(t, err)
			}
			for _, w := range tt.want {
				assert.Regexp(t, w, out.String())
			}
		})
	}
}
