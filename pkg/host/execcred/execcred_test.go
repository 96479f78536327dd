package execcred

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/pkg/apis/clientauthentication"
	"k8s.io/client-go/pkg/apis/clientauthentication/install"
)

func TestParseRequest(t *testing.T) {
	tests := []struct {
		name          string
		value         string
		want          *Request
		wantErrSubstr string
	}{
		{name: "absent means v1, run by hand", value: "", want: &Request{APIVersion: APIVersionV1}},
		{
			name:  "v1 interactive",
			value: `{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","spec":{"interactive":true}}`,
			want:  &Request{APIVersion: APIVersionV1, Interactive: true, FromKubectl: true},
		},
		{
			name:  "v1beta1 non-interactive with cluster",
			value: `{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1","spec":{"interactive":false,"cluster":{"server":"https://127.0.0.1:6443","certificate-authority-data":"Y2E=","config":{"profile":"a"}}}}`,
			want: &Request{APIVersion: APIVersionV1beta1, FromKubectl: true, Cluster: &Cluster{
				Server: "https://127.0.0.1:6443", CertificateAuthorityData: []byte("ca"), Config: []byte(`{"profile":"a"}`),
			}},
		},
		{name: "not json", value: `{`, wantErrSubstr: "invalid KUBERNETES_EXEC_INFO"},
		{name: "alpha version", value: `{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1alpha1"}`, wantErrSubstr: `apiVersion "client.authentication.k8s.io/v1alpha1" is not supported`},
		{name: "no version", value: `{"kind":"ExecCredential"}`, wantErrSubstr: "apiVersion is missing"},
		{name: "wrong kind", value: `{"kind":"Pod","apiVersion":"client.authentication.k8s.io/v1"}`, wantErrSubstr: `kind "Pod"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRequest(tt.value)
			if tt.wantErrSubstr != "" {
				require.ErrorContains(t, err, tt.wantErrSubstr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestWriteReplyDecodesWithClientGo decodes the reply the way client-go's exec
// authenticator does (plugin/pkg/client/auth/exec: UniversalDecoder, then a
// group/version comparison against the configured apiVersion).
func TestWriteReplyDecodesWithClientGo(t *testing.T) {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	codecs := serializer.NewCodecFactory(scheme)
	expiry := time.Date(2030, 1, 2, 3, 4, 5, 999_000_000, time.FixedZone("x", 3600))

	for _, apiVersion := range []string{APIVersionV1, APIVersionV1beta1} {
		t.Run(apiVersion, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, WriteReply(&buf, &Request{APIVersion: apiVersion, Interactive: true}, "tok.en.value", expiry))

			gv, err := schema.ParseGroupVersion(apiVersion)
			require.NoError(t, err)
			cred := &clientauthentication.ExecCredential{}
			_, gvk, err := codecs.UniversalDecoder(gv).Decode(buf.Bytes(), nil, cred)
			require.NoError(t, err)
			assert.Equal(t, gv.Group, gvk.Group)
			assert.Equal(t, gv.Version, gvk.Version)
			require.NotNil(t, cred.Status)
			assert.Equal(t, "tok.en.value", cred.Status.Token)
			require.NotNil(t, cred.Status.ExpirationTimestamp)
			assert.True(t, cred.Status.ExpirationTimestamp.Time.Equal(time.Date(2030, 1, 2, 2, 4, 5, 0, time.UTC)),
				"expiry %s must be rounded down to the second, in UTC", cred.Status.ExpirationTimestamp.Time)
		})
	}
}

func TestWriteReplyRejectsEmptyToken(t *testing.T) {
	var buf bytes.Buffer
	require.ErrorContains(t, WriteReply(&buf, &Request{}, "", time.Now()), "empty token")
	assert.Zero(t, buf.Len())
}

// TestMarshalMatchesEncodingJSON pins the hand-written encoder to what
// encoding/json makes of the same struct.
func TestMarshalMatchesEncodingJSON(t *testing.T) {
	for _, r := range []wireReply{
		{Kind: kindExecCredential, APIVersion: APIVersionV1, Status: wireStatus{Token: "a.b.c", ExpirationTimestamp: "2030-01-01T00:00:00Z"}},
		{Kind: kindExecCredential, APIVersion: APIVersionV1beta1, Spec: wireSpec{Interactive: true}, Status: wireStatus{Token: "quote\"and\\<tag>\u2028"}},
	} {
		got, err := r.marshal()
		require.NoError(t, err)
		want, err := json.Marshal(&r)
		require.NoError(t, err)
		assert.JSONEq(t, string(want), string(got))
		assert.True(t, bytes.HasSuffix(got, []byte("}\n")))
	}
}
