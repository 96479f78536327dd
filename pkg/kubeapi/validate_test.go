package kubeapi

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestCheckLabels: what kube-apiserver stores passes, what it refuses is
// refused in one bounded line.
func TestCheckLabels(t *testing.T) {
	for _, tt := range []struct {
		name    string
		labels  map[string]string
		wantErr string
	}{
		{"none", nil, ""},
		{"kubernetes' own", map[string]string{"app.kubernetes.io/name": "api", "kubernetes.io/metadata.name": "kube-system", "empty": ""}, ""},
		{"a 63-byte value", map[string]string{"v": strings.Repeat("a", 63)}, ""},
		{"a 64-byte value", map[string]string{"v": strings.Repeat("a", 64)}, "not a label value"},
		{"100 kB", map[string]string{"pad": strings.Repeat("p", 100_000)}, "not a label value"},
		{"an escape sequence", map[string]string{"v": "\x1b[2J"}, "not a label value"},
		{"a key with a space", map[string]string{"a b": "c"}, "not a qualified name"},
		{"a key of 100 kB", map[string]string{strings.Repeat("k", 100_000): "c"}, "not a qualified name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckLabels(tt.labels)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			if assert.ErrorContains(t, err, tt.wantErr) {
				assert.Less(t, len(err.Error()), 200, "bounded")
				assert.NotContains(t, err.Error(), "\x1b")
			}
		})
	}
}
