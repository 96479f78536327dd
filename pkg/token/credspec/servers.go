package credspec

import (
	"encoding/pem"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/execcred"
)

// SameServer compares two server URLs as kubeconfigs write them.
func SameServer(a, b string) bool {
	return strings.EqualFold(strings.TrimSuffix(a, "/"), strings.TrimSuffix(b, "/"))
}

// CheckAllowedServer refuses to hand a token to a cluster the settings do
// not list, so that a token meant for one tenant's clusters cannot be sent
// to another's by a mistaken or hostile kubeconfig. c is spec.cluster of
// the ExecCredential request (nil when kubectl gave no cluster
// information). Besides the server URL, everything in the cluster entry
// that could hand the token to someone else is checked: proxy-url,
// insecure-skip-tls-verify, a tls-server-name other than the server's
// host, and, with --allowed-server-certificate-authority, the CA.
func (o *Spec) CheckAllowedServer(c *execcred.Cluster) error {
	if len(o.AllowedServers) == 0 {
		return nil
	}
	if c == nil || c.Server == "" {
		return fmt.Errorf("--%s is set, but the client running this plugin did not say which server the token is "+
			"for: set provideClusterInfo: true in the kubeconfig exec entry (setup writes it; kubectl and client-go "+
			"send the server then, the Python and JavaScript clients never do)", FlagAllowedServer)
	}
	server := strings.TrimSuffix(c.Server, "/")
	if !slices.ContainsFunc(o.AllowedServers, func(a string) bool { return SameServer(a, server) }) {
		return fmt.Errorf("refusing to hand a token to %s: it is not among the allowed servers (%s); add it with "+
			"--%s if it is yours", server, strings.Join(o.AllowedServers, ", "), FlagAllowedServer)
	}
	refuse := func(why string) error {
		return fmt.Errorf("refusing to hand a token to %s: its kubeconfig cluster %s; remove that from the cluster "+
			"entry", server, why)
	}
	switch {
	case c.InsecureSkipTLSVerify:
		return refuse("skips TLS verification (insecure-skip-tls-verify), so anyone on the way could take the token")
	case c.ProxyURL != "":
		return refuse(fmt.Sprintf("sends it through the proxy %s (proxy-url)", c.ProxyURL))
	}
	if c.TLSServerName != "" {
		u, err := url.Parse(server)
		if err != nil || !strings.EqualFold(c.TLSServerName, u.Hostname()) {
			return refuse(fmt.Sprintf("accepts a certificate for %q (tls-server-name), not for the server's own name",
				c.TLSServerName))
		}
	}
	if o.AllowedServerCA != "" {
		pinned, err := os.ReadFile(o.AllowedServerCA)
		if err != nil {
			return fmt.Errorf("reading --%s: %w", FlagAllowedServerCA, err)
		}
		if !samePEMCertificates(pinned, c.CertificateAuthorityData) {
			return refuse(fmt.Sprintf("trusts other certificate authorities than %s (--%s)", o.AllowedServerCA,
				FlagAllowedServerCA))
		}
	}
	return nil
}

// samePEMCertificates compares the CERTIFICATE blocks of two PEM bundles
// byte for byte (no x509 parsing: this runs in the fast binary).
func samePEMCertificates(a, b []byte) bool {
	set := func(b []byte) []string {
		var out []string
		for {
			var blk *pem.Block
			blk, b = pem.Decode(b)
			if blk == nil {
				break
			}
			if blk.Type == "CERTIFICATE" {
				out = append(out, string(blk.Bytes))
			}
		}
		slices.Sort(out)
		return out
	}
	sa, sb := set(a), set(b)
	return len(sa) > 0 && slices.Equal(sa, sb)
}
