package credspec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/execcred"
)

// ExecExtensionName is the kubeconfig cluster extension client-go hands an
// exec plugin as spec.cluster.config when provideClusterInfo is true.
const ExecExtensionName = "client.authentication.k8s.io/exec"

// ClusterExtension is what this plugin reads from a cluster's exec
// extension: the audience of the cluster's tokens (an RFC 8693 exchange of
// the one login), and optionally the server the cluster entry must name.
type ClusterExtension struct {
	Audience      string `json:"audience,omitempty"`
	AllowedServer string `json:"allowedServer,omitempty"`
}

// maxAudience bounds an audience read from a kubeconfig.
const maxAudience = 512

// ParseClusterExtension reads a cluster's exec extension (empty: none).
// Unknown keys are refused: a misspelt audience would silently hand out
// the login token instead.
func ParseClusterExtension(raw []byte) (ClusterExtension, error) {
	var ext ClusterExtension
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return ext, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ext); err != nil {
		return ext,
			fmt.Errorf("the kubeconfig cluster's %s extension: %v (its keys are audience and allowedServer)",
				ExecExtensionName, oneLine(err.Error()))
	}
	if len(ext.Audience) > maxAudience ||
		strings.ContainsFunc(ext.Audience, func(r rune) bool { return !strconv.IsPrint(r) || r == ' ' }) {
		return ext, fmt.Errorf("the kubeconfig cluster's %s extension: audience %.64q is not a printable name of at "+
			"most %d bytes", ExecExtensionName, ext.Audience, maxAudience)
	}
	return ext, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// ForCluster adapts the settings to the cluster kubectl asks a token for
// (c, spec.cluster of the ExecCredential): with
// --exchange-audience-from-cluster, the login's token is exchanged for the
// audience the cluster's exec extension names, each audience a cache entry
// of its own; a cluster whose extension names none gets the login token
// itself. The extension's allowedServer, if any, must be the cluster's
// server: it can narrow where the token goes, never widen it.
func (o *Spec) ForCluster(c *execcred.Cluster) error {
	if !o.ExchangeFromCluster {
		return nil
	}
	if c == nil {
		return fmt.Errorf("--%s needs to know the cluster: set provideClusterInfo: true in the kubeconfig exec entry "+
			"(setup writes it)", FlagExchangeFromCluster)
	}
	ext, err := ParseClusterExtension(c.Config)
	if err != nil {
		return err
	}
	if ext.AllowedServer != "" && !SameServer(ext.AllowedServer, c.Server) {
		return fmt.Errorf("refusing to hand a token to %s: the cluster's %s extension allows %s only",
			strings.TrimSuffix(c.Server, "/"), ExecExtensionName, ext.AllowedServer)
	}
	if ext.Audience == "" {
		o.Exchange = ExchangeNone
		return nil
	}
	o.ExchangeAudiences = []string{ext.Audience}
	return nil
}
