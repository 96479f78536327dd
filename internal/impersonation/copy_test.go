package impersonation

import (
	"bytes"
	"flag"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "copy the files from the module cache")

// upstreamFiles are the filter's files, copied as they are but for the
// import of pkg/endpoints/filters (GetAuthorizerAttributes is ours).
var upstreamFiles = []string{"impersonation.go", "constrained_impersonation.go", "mode.go", "cache.go"}

const filtersImport = "\t\"k8s.io/apiserver/pkg/endpoints/filters\"\n"

// upstreamDir is k8s.io/apiserver's filters directory at go.mod's version.
func upstreamDir(t *testing.T) string {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/apiserver").Output()
	require.NoError(t, err, "go list -m k8s.io/apiserver")
	return filepath.Join(strings.TrimSpace(string(out)), "pkg", "endpoints", "filters")
}

// copied is what this package holds of an upstream file.
func copied(src []byte) []byte {
	s := strings.Replace(string(src), filtersImport, "", 1)
	return []byte(strings.ReplaceAll(s, "filters.GetAuthorizerAttributes(", "getAuthorizerAttributes("))
}

// attributesFunc is upstream's GetAuthorizerAttributes as
// getAuthorizerAttributes, in a file of this package.
func attributesFunc(t *testing.T, authorization []byte) []byte {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "authorization.go", authorization, parser.ParseComments)
	require.NoError(t, err)
	var fn *ast.FuncDecl
	for _, d := range f.Decls {
		if d, ok := d.(*ast.FuncDecl); ok && d.Name.Name == "GetAuthorizerAttributes" {
			fn = d
		}
	}
	require.NotNil(t, fn, "GetAuthorizerAttributes in authorization.go")
	fn.Name.Name = "getAuthorizerAttributes"
	var body bytes.Buffer
	require.NoError(t, printer.Fprint(&body, fset, fn))
	return []byte(`// Copied from k8s.io/apiserver pkg/endpoints/filters/authorization.go
// (GetAuthorizerAttributes), under its Apache License 2.0, by
// TestCopyOfUpstream: see doc.go.

package impersonation

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
)

` + body.String() + "\n")
}

// TestCopyOfUpstream: every file is k8s.io/apiserver's own at the version
// go.mod names (doc.go).
func TestCopyOfUpstream(t *testing.T) {
	dir := upstreamDir(t)
	want := map[string][]byte{}
	for _, name := range upstreamFiles {
		b, err := os.ReadFile(filepath.Join(dir, "impersonation", name))
		require.NoError(t, err)
		require.Contains(t, string(b), "package impersonation")
		want[name] = copied(b)
	}
	auth, err := os.ReadFile(filepath.Join(dir, "authorization.go"))
	require.NoError(t, err)
	want["authorizer_attributes.go"] = attributesFunc(t, auth)
	for name, b := range want {
		if *update {
			require.NoError(t, os.WriteFile(name, b, 0o644))
			continue
		}
		got, err := os.ReadFile(name)
		require.NoError(t, err)
		assert.Equal(t, string(b), string(got), "%s differs from k8s.io/apiserver's: run go test ./internal/impersonation -run TestCopyOfUpstream -update", name)
	}
}
