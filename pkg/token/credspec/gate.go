package credspec

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/execcred"
)

// Admit is the one set of rules a token passes before it is handed to the
// cluster c.
//
//   - c is spec.cluster of the ExecCredential, or what the plugin's own
//     clients would send; nil when the exec entry provides no cluster
//     information.
//   - The server speaks https (CheckScheme).
//   - It is among the allowed servers, with nothing in its cluster entry
//     that would hand the token to someone else (CheckAllowedServer).
//   - The settings become the cluster's own (ForCluster: a fleet's
//     per-cluster audience).
//
// get-token, the fast binary and session.Gate (the reader of the plugin's
// own clients' token) call it; nothing else hands a token out.
func (o *Spec) Admit(c *execcred.Cluster) error {
	if c != nil {
		if err := CheckScheme(c.Server); err != nil {
			return err
		}
	}
	if err := o.CheckAllowedServer(c); err != nil {
		return err
	}
	return o.ForCluster(c)
}

// CheckScheme refuses a server a bearer token would reach in clear text
// (http://), or one whose URL cannot be read: anyone on the way could take
// the token. Kubernetes API servers serve https only since 1.20.
func CheckScheme(server string) error {
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return fmt.Errorf("refusing to hand a token to %q: it is not a server URL (https://HOST[:PORT]); fix the "+
			"kubeconfig cluster's server", server)
	}
	if !strings.EqualFold(u.Scheme, "https") {
		return fmt.Errorf("refusing to hand a token to %s: %s:// would send it in clear text; use the server's "+
			"https:// URL in the kubeconfig cluster", strings.TrimSuffix(server, "/"), u.Scheme)
	}
	return nil
}
