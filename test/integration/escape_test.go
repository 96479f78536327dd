package integration

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestTerminalEscapesFromTheCluster: user names, groups and RBAC subject
// names are other people's text (any namespace admin names a RoleBinding's
// subjects): the human output of whoami and who-can shows their escape
// sequences (C0 and C1) as text, never as control characters.
func TestTerminalEscapesFromTheCluster(t *testing.T) {
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		p := r.URL.Path
		switch {
		case strings.HasSuffix(p, "/selfsubjectreviews"):
			_, _ = w.Write([]byte(`{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1","status":{"userInfo":{"username":"alice\u001b]0;owned\u0007\u009b31m","groups":["dev\u001b[2J"],"extra":{"k\u001b[1m":["v\u009b"]}}}}`))
		case strings.HasSuffix(p, "/clusterrolebindings"):
			_, _ = w.Write([]byte(`{"kind":"ClusterRoleBindingList","apiVersion":"rbac.authorization.k8s.io/v1","items":[{"metadata":{"name":"b\u001b[31m"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"r"},"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"alice\u001b]0;owned\u0007\u009b31m"}]}]}`))
		case strings.HasSuffix(p, "/clusterroles"):
			_, _ = w.Write([]byte(`{"kind":"ClusterRoleList","apiVersion":"rbac.authorization.k8s.io/v1","items":[{"metadata":{"name":"r"},"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get"]}]}]}`))
		case strings.HasSuffix(p, "/rolebindings"):
			_, _ = w.Write([]byte(`{"kind":"RoleBindingList","apiVersion":"rbac.authorization.k8s.io/v1","items":[]}`))
		case strings.HasSuffix(p, "/roles"):
			_, _ = w.Write([]byte(`{"kind":"RoleList","apiVersion":"rbac.authorization.k8s.io/v1","items":[]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer api.Close()
	e := newEnv(t)
	kubeconfig := filepath.Join(e.home, "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: api.URL, CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw})}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "static"}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u", Namespace: "a"}
	cfg.CurrentContext = "c"
	require.NoError(t, clientcmd.WriteToFile(*cfg, kubeconfig))

	for _, args := range [][]string{{"whoami"}, {"who-can", "get", "pods", "-n", "a"}} {
		t.Run(args[0], func(t *testing.T) {
			r := e.run(nil, append(args, "--kubeconfig="+kubeconfig)...)
			require.Equal(t, 0, r.code, r.stderr)
			assert.Contains(t, r.stdout, "alice")
			assert.NotContains(t, r.stdout, "\x1b", "ESC reached the terminal")
			assert.NotContains(t, r.stdout, "\x07")
			assert.NotContains(t, r.stdout, "\u009b", "C1 CSI reached the terminal")
			assert.NotContains(t, r.stderr, "\x1b")
			assert.Contains(t, r.stdout, `\x1b`, "shown as text")
		})
	}
}
