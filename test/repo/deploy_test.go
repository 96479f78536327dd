package repo

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSudoControllerImage: direct mode's controller runs the proxy's image,
// named by the same tag and digest in both manifests (make deploy-manifest
// rewrites the proxy's; this keeps the controller's with it).
func TestSudoControllerImage(t *testing.T) {
	image := regexp.MustCompile(`(?m)^\s*image:\s*(ghcr\.io/kubectl-impersonate/kubectl-impersonate\S*)\s*$`)
	refs := map[string][]string{}
	for _, f := range []string{"deploy/proxy/proxy.yaml", "deploy/sudo/controller.yaml"} {
		b, err := os.ReadFile(filepath.Join(docRoot, f))
		require.NoError(t, err)
		for _, m := range image.FindAllSubmatch(b, -1) {
			refs[f] = append(refs[f], string(m[1]))
		}
		require.Len(t, refs[f], 1, f)
		assert.Regexp(t, `@sha256:[0-9a-f]{64}$`, refs[f][0], "%s names its image by digest", f)
	}
	assert.Equal(t, refs["deploy/proxy/proxy.yaml"], refs["deploy/sudo/controller.yaml"])
}
