package repo

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// layers are pkg/'s folders, each a layer, and the layers each may
// import (its own aside): the tree shows what sits on what, and nothing
// below imports what is above it (docs/testing.md, "The code").
var layers = map[string][]string{
	// the process, its files and kubectl around it: environment, logging,
	// the atomic write and permissions, the install, kubeconfig, kuberc and
	// the exec credential protocol
	"host": nil,
	// a token: what selects it, where it is kept, the get-token use case
	"token": {"host"},
	// the identity providers' protocols: OIDC logins, token endpoints, the
	// exchanges
	"idp": {"host", "token"},
	// the credential plugin: flags, profiles, exec entries, sessions, the
	// fast binary's path
	"credential": {"host", "token", "idp"},
	// the Kubernetes API as a client sees it, inspection, and what an
	// identity used and needs
	"cluster": {"host"},
	// kube-apiserver's own code and what is built on it: the proxy, and
	// record's endpoint (which writes pkg/cluster/auditlog's requests)
	"server": {"host", "token", "idp", "cluster"},
	// the commands: any layer
	"cmd": {"host", "token", "idp", "credential", "cluster", "server"},
}

// TestPackageLayers: every package under pkg/ is in one of the layers, and
// imports only its own layer's packages and those of the layers below it.
func TestPackageLayers(t *testing.T) {
	layerOf := func(importPath string) (string, bool) {
		rest, ok := strings.CutPrefix(importPath, module+"/pkg/")
		if !ok {
			return "", false
		}
		return strings.Split(rest, "/")[0], true
	}
	var found []string
	for _, p := range goPackages(t) {
		l, ok := layerOf(p.ImportPath)
		if !ok {
			continue
		}
		allowed, known := layers[l]
		if !known {
			found = append(found, p.ImportPath+": not in a layer of pkg/")
			continue
		}
		for _, imp := range p.Imports {
			if il, ok := layerOf(imp); ok && il != l && !slices.Contains(allowed, il) {
				found = append(found, p.ImportPath+" imports "+imp+" ("+il+" is not below "+l+")")
			}
		}
	}
	assert.Empty(t, found, "pkg/'s layers: %v", layers)
}
