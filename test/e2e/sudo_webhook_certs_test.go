//go:build e2e

package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
)

// sudoWebhookClient makes what docs/elevation.md asks of the fail-closed
// webhook's client authentication: a CA of its own (not the cluster's
// client CA), for sudo-controller's --client-ca-file, and kube-apiserver's
// client certificate from it, for the webhook's kubeconfig.
func (s *stack) sudoWebhookClient() error {
	ca, err := newCA("sudo webhook clients e2e CA")
	if err != nil {
		return err
	}
	der, keyDER, err := ca.issue(&x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return err
	}
	s.sudoClientCA = filepath.Join(s.work, "sudo-webhook-clients-ca.crt")
	s.sudoClientCert = filepath.Join(s.work, "sudo-webhook-client.crt")
	s.sudoClientKey = filepath.Join(s.work, "sudo-webhook-client.key")
	if err := writePEM(s.sudoClientCA, "CERTIFICATE", ca.der); err != nil {
		return err
	}
	if err := writePEM(s.sudoClientCert, "CERTIFICATE", der); err != nil {
		return err
	}
	return writePEM(s.sudoClientKey, "EC PRIVATE KEY", keyDER)
}

// assertWebhookAnswersOnlyKubeAPIServer: the fail-closed webhook running
// with --client-ca-file answers only kube-apiserver's client certificate. A
// local user who reaches its port with no certificate, or with one the
// cluster's CA signed, learns nothing (whose grants count, and why not).
func assertWebhookAnswersOnlyKubeAPIServer(t *testing.T) {
	serving, err := tls.LoadX509KeyPair(st.certFile, st.keyFile)
	require.NoError(t, err)
	apiserver, err := tls.LoadX509KeyPair(st.sudoClientCert, st.sudoClientKey)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(st.caPEM)
	review := `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview",` +
		`"spec":{"user":"alice","groups":["sudo:x:y"],"resourceAttributes":{"verb":"get","resource":"pods"}}}`
	// The certificate is sent whatever CAs the webhook names as acceptable
	// (Go's client would otherwise send none that another CA signed).
	ask := func(cert *tls.Certificate) (int, string, error) {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12,
				GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }}}}
		defer c.CloseIdleConnections()
		resp, err := c.Post("https://"+st.sudoWebhookAddr+"/", "application/json", strings.NewReader(review))
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	for name, cert := range map[string]*tls.Certificate{
		"no client certificate":                        {},
		"the cluster CA's certificate, not a client's": &serving,
	} {
		code, body, err := ask(cert)
		assert.Error(t, err, "%s: answered %d %s", name, code, body)
	}
	code, body, err := ask(&apiserver)
	require.NoError(t, err, "kube-apiserver's client certificate")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"denied":true`, "a made-up elevation is denied")
}

// sudoAuthorizerKubeconfig is deploy/sudo/authorizer.kubeconfig as a
// cluster's admin edits it: the webhook's address (sudoWebhookAddr), the CA
// of its serving certificate (the stack's), and kube-apiserver's client
// certificate (made by sudoWebhookClient, which runs first).
func (s *stack) sudoAuthorizerKubeconfig() (string, error) {
	const shipped = "../../deploy/sudo/authorizer.kubeconfig"
	cfg, err := clientcmd.LoadFromFile(shipped)
	if err != nil {
		return "", err
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil || cfg.Clusters[ctx.Cluster] == nil || cfg.AuthInfos[ctx.AuthInfo] == nil {
		return "", errors.New(shipped + ": its current context names no cluster or user")
	}
	c, u := cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo]
	if !strings.Contains(c.Server, "SUDO_CONTROLLER_ADDRESS:8443") || c.CertificateAuthority == "" ||
		u.ClientCertificate == "" || u.ClientKey == "" {
		return "", errors.New(shipped + ": not the template (server, CA, client certificate and key) this test fills in")
	}
	c.Server = strings.Replace(c.Server, "SUDO_CONTROLLER_ADDRESS:8443", s.sudoWebhookAddr, 1)
	c.CertificateAuthority, u.ClientCertificate, u.ClientKey = s.caFile, s.sudoClientCert, s.sudoClientKey
	path := filepath.Join(s.work, "sudo-authorizer.kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}
