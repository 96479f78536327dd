package credspec

import (
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/execcred"
)

// TestAdmit is the gate's table (issue 46): every rule a token passes
// before it goes to a cluster, each row a cluster entry someone else may
// have written, with the allowed servers a profile names.
func TestAdmit(t *testing.T) {
	const server = "https://api.tenant.example:6443"
	cert := func(b byte) []byte {
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{b, b, b}})
	}
	pin := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(pin, append(cert(1), cert(2)...), 0o600))
	empty := filepath.Join(t.TempDir(), "empty.pem")
	require.NoError(t, os.WriteFile(empty, []byte("no certificate here\n"), 0o600))
	for _, tt := range []struct {
		name    string
		allowed []string
		ca      string
		cluster *execcred.Cluster
		wantErr string
	}{
		{name: "no list: any https server", cluster: &execcred.Cluster{Server: "https://anywhere.example"}},
		{name: "no list, no cluster information", cluster: nil},
		{name: "no list: http refused", cluster: &execcred.Cluster{Server: "http://anywhere.example"}, wantErr: "http:// would send it in clear text"},
		{name: "no list: HTTP refused", cluster: &execcred.Cluster{Server: "HTTP://anywhere.example"}, wantErr: "in clear text"},
		{name: "not a URL", cluster: &execcred.Cluster{Server: "api.example:6443"}, wantErr: "is not a server URL"},
		{name: "no host", cluster: &execcred.Cluster{Server: "https://"}, wantErr: "is not a server URL"},
		{name: "allowed", allowed: []string{server}, cluster: &execcred.Cluster{Server: server}},
		{name: "allowed, trailing slash and case", allowed: []string{server}, cluster: &execcred.Cluster{Server: "https://API.tenant.example:6443/"}},
		{name: "allowed, one of two", allowed: []string{"https://other.example", server}, cluster: &execcred.Cluster{Server: server}},
		{name: "listed over http", allowed: []string{"http://api.tenant.example:6443"}, cluster: &execcred.Cluster{Server: "http://api.tenant.example:6443"}, wantErr: "in clear text"},
		{name: "not listed", allowed: []string{server}, cluster: &execcred.Cluster{Server: "https://evil.example:6443"}, wantErr: "not among the allowed servers"},
		{name: "another port", allowed: []string{server}, cluster: &execcred.Cluster{Server: "https://api.tenant.example:6444"}, wantErr: "not among the allowed servers"},
		{name: "a list, no cluster information", allowed: []string{server}, wantErr: "set provideClusterInfo: true"},
		{name: "a list, no server", allowed: []string{server}, cluster: &execcred.Cluster{}, wantErr: "is not a server URL"},
		{name: "insecure-skip-tls-verify", allowed: []string{server}, cluster: &execcred.Cluster{Server: server, InsecureSkipTLSVerify: true}, wantErr: "skips TLS verification"},
		{name: "proxy-url", allowed: []string{server}, cluster: &execcred.Cluster{Server: server, ProxyURL: "http://proxy.example:3128"}, wantErr: "through the proxy http://proxy.example:3128"},
		{name: "tls-server-name of another host", allowed: []string{server}, cluster: &execcred.Cluster{Server: server, TLSServerName: "evil.example"}, wantErr: "accepts a certificate for \"evil.example\""},
		{name: "tls-server-name of the server's host", allowed: []string{server}, cluster: &execcred.Cluster{Server: server, TLSServerName: "API.tenant.example"}},
		{name: "the pinned CAs", allowed: []string{server}, ca: pin, cluster: &execcred.Cluster{Server: server, CertificateAuthorityData: append(cert(2), cert(1)...)}},
		{name: "one CA more than the pin", allowed: []string{server}, ca: pin, cluster: &execcred.Cluster{Server: server, CertificateAuthorityData: append(append(cert(2), cert(1)...), cert(3)...)}, wantErr: "trusts other certificate authorities"},
		{name: "one CA fewer than the pin", allowed: []string{server}, ca: pin, cluster: &execcred.Cluster{Server: server, CertificateAuthorityData: cert(1)}, wantErr: "trusts other certificate authorities"},
		{name: "no CA with a pin (the system's)", allowed: []string{server}, ca: pin, cluster: &execcred.Cluster{Server: server}, wantErr: "trusts other certificate authorities"},
		{name: "a pin without certificates, a cluster without CA", allowed: []string{server}, ca: empty, cluster: &execcred.Cluster{Server: server}, wantErr: "trusts other certificate authorities"},
		{name: "an unreadable pin", allowed: []string{server}, ca: pin + ".missing", cluster: &execcred.Cluster{Server: server}, wantErr: "reading --allowed-server-certificate-authority"},
		{name: "the extension is read in fleet mode only", allowed: []string{server}, cluster: &execcred.Cluster{Server: server, Config: []byte(`{"allowedServer":"https://other.example"}`)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := NewSpec()
			o.AllowedServers, o.AllowedServerCA = tt.allowed, tt.ca
			err := o.Admit(tt.cluster)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

// TestAdmitBindsTheCluster: the settings Admit returns with are the
// cluster's own (a fleet's per-cluster audience), and a cluster whose
// extension allows another server is refused.
func TestAdmitBindsTheCluster(t *testing.T) {
	o := NewSpec()
	o.Exchange, o.ExchangeFromCluster = ExchangeTokenExchange, true
	require.NoError(t, o.Admit(&execcred.Cluster{Server: "https://a.example", Config: []byte(`{"audience":"cluster-a"}`)}))
	assert.Equal(t, []string{"cluster-a"}, o.ExchangeAudiences)
	o = NewSpec()
	o.Exchange, o.ExchangeFromCluster = ExchangeTokenExchange, true
	err := o.Admit(&execcred.Cluster{Server: "https://evil.example", Config: []byte(`{"audience":"a","allowedServer":"https://a.example"}`)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "allows https://a.example only")
}

// TestPinNeedsServers: a CA pin alone would pin nothing (the pin is
// checked for an allowed server): refused.
func TestPinNeedsServers(t *testing.T) {
	o := NewSpec()
	o.AllowedServerCA = "/etc/ca.pem"
	assert.ErrorContains(t, o.Servers.Validate(), "give --allowed-server too")
	o.AllowedServers = []string{"https://a.example"}
	assert.NoError(t, o.Servers.Validate())
	o.AllowedServers = []string{"a.example"}
	assert.ErrorContains(t, o.Servers.Validate(), "is not a URL")
}
