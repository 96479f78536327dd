package resource

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/kubeapi"
)

// TestListPaging: objects are listed 500 at a time, following continue
// tokens, as kubectl does; the namespaces' metadata in one request.
func TestListPaging(t *testing.T) {
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries = append(queries, r.URL.Path+"?"+r.URL.RawQuery)
		next, items := "", []string{`{"metadata":{"name":"last"}}`}
		if r.URL.Query().Get("continue") == "" && r.URL.Query().Get("limit") != "" {
			next, items = "page-2", []string{`{"metadata":{"name":"first"}}`}
		}
		fmt.Fprintf(w, `{"metadata":{"continue":%q},"items":[%s]}`, next, strings.Join(items, ","))
	}))
	defer srv.Close()
	c := newClient(t, srv.URL)
	objs, err := c.List(context.Background(), Resource{Version: "v1", Name: "configmaps", Namespaced: true}, "", "a=b", false)
	require.NoError(t, err)
	require.Len(t, objs, 2)
	assert.Equal(t, []string{"first", "last"}, []string{objs[0].Name, objs[1].Name})
	assert.Equal(t, []string{"/api/v1/configmaps?labelSelector=a%3Db&limit=500", "/api/v1/configmaps?continue=page-2&labelSelector=a%3Db&limit=500"}, queries)

	queries = nil
	names, err := c.NamespacesWith(context.Background(), "")
	require.NoError(t, err)
	assert.Equal(t, []string{"last"}, names)
	assert.Equal(t, []string{"/api/v1/namespaces?"}, queries, "one request, no limit")
}

// newClient is a Client for a test server.
func newClient(t *testing.T, host string) *Client {
	t.Helper()
	c, err := kubeapi.NewClient(&rest.Config{Host: host})
	require.NoError(t, err)
	return New(c)
}
