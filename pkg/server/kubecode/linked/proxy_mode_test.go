package linked

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/kubecode"
)

// auto picks kube-apiserver's constrained filter from 1.36, where its
// feature gate is on by default, and the classic one before it or when
// the version cannot be read (the constrained filter would allow what a
// 1.35 API server refuses).
func TestCallerImpersonationMode(t *testing.T) {
	for _, tt := range []struct {
		mode, gitVersion string
		status           int
		want             bool
	}{
		{kubecode.CallerImpersonationAuto, "v1.37.2", 200, true},
		{kubecode.CallerImpersonationAuto, "v1.36.0-rc.1", 200, true},
		{kubecode.CallerImpersonationAuto, "v1.35.4", 200, false},
		{kubecode.CallerImpersonationAuto, "", 403, false},
		{kubecode.CallerImpersonationAuto, "garbage", 200, false},
		{kubecode.CallerImpersonationConstrained, "v1.35.4", 200, true},
		{kubecode.CallerImpersonationClassic, "v1.37.2", 200, false},
	} {
		t.Run(tt.mode+" "+tt.gitVersion, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				fmt.Fprintf(w, `{"gitVersion":%q}`, tt.gitVersion)
			}))
			defer srv.Close()
			u, err := url.Parse(srv.URL)
			require.NoError(t, err)
			got, why := callerImpersonationMode(context.Background(), tt.mode, u, http.DefaultTransport)
			assert.Equal(t, tt.want, got, why)
			assert.NotEmpty(t, why)
		})
	}
}
