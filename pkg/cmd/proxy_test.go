package cmd

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/proxy"
)

// TestProxyTokenCacheSize: --token-cache-size defaults to the handler's
// default, and 0 turns the cache off (docs/proxy.md: "0 authenticates
// every request"; pkg/proxy's TestIdentityCache checks the handler's -1).
func TestProxyTokenCacheSize(t *testing.T) {
	for _, tt := range []struct {
		flag string
		want int
	}{
		{"", proxy.DefaultCacheSize},
		{"--token-cache-size=0", -1},
		{"--token-cache-size=10", 10},
	} {
		t.Run(tt.flag, func(t *testing.T) {
			c := NewCmdProxy(&GlobalOptions{}, genericiooptions.NewTestIOStreamsDiscard())
			if tt.flag != "" {
				assert.NoError(t, c.ParseFlags([]string{tt.flag}))
			}
			o := &ProxyOptions{}
			// The command's options are reached through its flag's value.
			n, err := c.Flags().GetInt("token-cache-size")
			assert.NoError(t, err)
			o.TokenCacheSize = n
			assert.Equal(t, tt.want, o.cacheSize())
		})
	}
}
