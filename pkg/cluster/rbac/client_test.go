package rbac

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/kubeapi"
)

// newClient is a Client for a test server.
func newClient(t *testing.T, host string) *Client {
	t.Helper()
	c, err := kubeapi.NewClient(&rest.Config{Host: host})
	require.NoError(t, err)
	return New(c)
}
