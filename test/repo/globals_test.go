package repo

import (
	"go/ast"
	"path"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// processReads are the identifiers that read the process's globals: its
// command line, its environment, the home directory (from the
// environment) and kubectl's default kubeconfig (client-go reads
// $KUBECONFIG and the home directory for it); pkg/host/environ's readers count
// too, so that the seam is not a way around the rule.
var processReads = map[string][]string{
	"os":                               {"Args", "Getenv", "LookupEnv", "Environ", "ExpandEnv", "UserHomeDir"},
	"syscall":                          {"Getenv", "Environ"},
	"k8s.io/client-go/tools/clientcmd": {"NewDefaultClientConfigLoadingRules", "RecommendedHomeFile", "RecommendedConfigDir"},
	"k8s.io/client-go/util/homedir":    {"HomeDir"},
	module + "/pkg/host/environ":       {"Getenv", "Environ"},
}

// processReaders are the files below cmd/ that may read the process, and
// why: everything else takes what it needs as parameters (a getenv, a
// session.Process, an environment).
var processReaders = map[string]string{
	"pkg/host/environ/environ.go": "the seam itself",
	"pkg/cmd/util/options.go":     "GlobalOptions: where the commands read the process (Getenv, the command line, the environment a hand-off passes on)",
	"pkg/cmd/util/kubeflags.go": "kubectl's own kubeconfig loading rules (clientcmd reads $KUBECONFIG and the home directory itself), " +
		"bound as kubectl binds them",
	"pkg/token/tokencache/keyring.go": "the fast get-token binary's hand-off of a keyring failure to the full one, " +
		"read where go-keyring is opened",
	"pkg/token/tokencache/available_unix.go":      "the D-Bus session bus's address, read as godbus reads it for go-keyring",
	"pkg/token/tokencache/secretservice_linux.go": "the D-Bus session bus's address, read as godbus reads it for go-keyring",
	"pkg/credential/settings/trust.go": "what a kubeconfig exec entry set is this process's environment less kubectl's: " +
		"both are read where they are compared (Options.Environ replaces it in tests)",
}

// TestProcessGlobals: no production code below the binaries' main
// packages reads the process's command line, environment, home directory
// or default kubeconfig, except the readers named above.
func TestProcessGlobals(t *testing.T) {
	var found []string
	for _, f := range productionFiles(t) {
		if strings.HasPrefix(f.path, "cmd/") {
			continue // the binaries' main functions
		}
		names := map[string]string{}
		for _, imp := range f.file.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			name := path.Base(p)
			if imp.Name != nil {
				name = imp.Name.Name
			}
			names[name] = p
		}
		ast.Inspect(f.file, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			for _, id := range processReads[names[x.Name]] {
				if sel.Sel.Name == id {
					if _, allowed := processReaders[f.path]; !allowed {
						found = append(found, f.fset.Position(sel.Pos()).String()+": "+x.Name+"."+id)
					}
				}
			}
			return true
		})
	}
	assert.Empty(t, found, "reads of the process below cmd/: take them as parameters (a getenv, session.Process), or name the file in processReaders with why")
	for file := range processReaders {
		assert.FileExists(t, docRoot+"/"+file, "processReaders names a file that is gone")
	}
	// The module's own packages the rule keys on exist (go list): a key
	// of a package that moved guards nothing (issue 57: it kept the
	// seam's old path after the seam moved to pkg/host/environ).
	listed := map[string]bool{}
	for _, p := range goPackages(t) {
		listed[p.ImportPath] = true
	}
	for imp := range processReads {
		if strings.HasPrefix(imp, module+"/") {
			assert.True(t, listed[imp], "processReads keys on %s, which go list does not list", imp)
		}
	}
}
