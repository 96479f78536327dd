package fastpath

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLinkedPackages: the cached get-token path runs on every kubectl
// call, so the fast binary links no network client code; no binary links
// cli-runtime's genericclioptions, and none but kubectl-impersonate-apiserver
// the full clientset (≈ 10 ms and 45 MiB per call, measured): that binary
// runs kube-apiserver's code, its impersonation filter among it, which
// links the clientset, and it runs for claims, the proxy and setup
// --authentication-config only, never on kubectl's calls.
func TestLinkedPackages(t *testing.T) {
	deps := func(pkg string) []string {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		require.NoError(t, err, "go list -deps %s", pkg)
		return strings.Fields(string(out))
	}
	for _, tt := range []struct {
		binary    string
		forbidden []string
	}{
		{"../../../cmd/kubectl-impersonate-get_token", []string{"net/http", "crypto/tls", "golang.org/x/oauth2", "k8s.io/client-go/rest",
			"k8s.io/apimachinery/pkg/runtime", "github.com/coreos/go-oidc/v3/oidc", "github.com/spf13/cobra"}},
		// kube-apiserver's code and its package initialisers (component-base's
		// metrics registry, CEL, the egress selector, Prometheus' client) are
		// kubectl-impersonate-apiserver's alone.
		{"../../../cmd/kubectl-impersonate", []string{"k8s.io/cli-runtime/pkg/genericclioptions", "k8s.io/client-go/kubernetes",
			"k8s.io/apiserver/pkg/apis/apiserver", "k8s.io/component-base/metrics/legacyregistry", "github.com/google/cel-go/cel",
			"github.com/prometheus/client_golang/prometheus", "github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/authn",
			"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/proxy",
			"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/identity",
			"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/upstream"}},
		{"../../../cmd/kubectl-impersonate-apiserver", []string{"k8s.io/cli-runtime/pkg/genericclioptions"}},
	} {
		linked := deps(tt.binary)
		require.Contains(t, linked, "github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/settings", "the list is the binary's")
		for _, f := range tt.forbidden {
			assert.NotContains(t, linked, f, "%s links %s", tt.binary, f)
		}
	}
}

// TestLayers: the protocol package imports nothing of ours, and the
// packages that belong to one binary are imported by that binary's main
// alone (pkg/host/install and pkg/credential/settings are the shared floor).
func TestLayers(t *testing.T) {
	const mod = "github.com/kubectl-impersonate/kubectl-impersonate/"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", mod+"...").Output()
	require.NoError(t, err)
	importers := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, mod) {
				importers[strings.TrimPrefix(imp, mod)] = append(importers[strings.TrimPrefix(imp, mod)], strings.TrimPrefix(f[0], mod))
			}
			if f[0] == mod+"pkg/host/execcred" {
				assert.False(t, strings.HasPrefix(imp, mod), "pkg/host/execcred imports %s", imp)
			}
		}
	}
	for pkg, only := range map[string]string{
		"pkg/credential/fastpath":    "cmd/kubectl-impersonate-get_token",
		"pkg/server/kubecode/linked": "cmd/kubectl-impersonate-apiserver",
	} {
		assert.Equal(t, []string{only}, importers[pkg], "the importers of %s", pkg)
	}
	// The seam: the commands know kube-apiserver's code by pkg/server/kubecode's
	// interface alone, which links none of it.
	out, err = exec.Command("go", "list", "-deps", mod+"pkg/server/kubecode").Output()
	require.NoError(t, err)
	for _, dep := range strings.Fields(string(out)) {
		assert.False(t, strings.HasPrefix(dep, "k8s.io/"), "pkg/server/kubecode links %s", dep)
	}
}
