package repo

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// importClass is the group an import belongs to: the standard library (no
// dot in its first element), other modules, this module.
func importClass(path string) int {
	switch {
	case path == module || strings.HasPrefix(path, module+"/"):
		return 2
	case !strings.Contains(strings.Split(path, "/")[0], "."):
		return 0
	}
	return 1
}

// TestImportGroups: every Go file's imports are in at most three groups,
// in this order: the standard library, other modules, this module (what
// goimports -local keeps but does not make: it leaves a group it finds
// where it is). make lint's goimports check and this rule together give
// every file the same shape.
func TestImportGroups(t *testing.T) {
	names := [3]string{"the standard library", "other modules", "this module"}
	var found []string
	for _, rel := range trackedFiles(t, "*.go") {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, filepath.Join(docRoot, rel), nil, parser.ImportsOnly)
		require.NoError(t, err, rel)
		last, lastLine := -1, 0
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			c := importClass(p)
			start := fset.Position(imp.Pos()).Line
			if imp.Doc != nil {
				start = fset.Position(imp.Doc.Pos()).Line
			}
			newGroup := last == -1 || start > lastLine+1
			switch {
			case c < last:
				found = append(found, rel+": "+p+" ("+names[c]+") after "+names[last])
			case !newGroup && c != last:
				found = append(found, rel+": "+p+" ("+names[c]+") in the group of "+names[last])
			case newGroup && c == last:
				found = append(found, rel+": "+names[c]+" in two groups ("+p+")")
			}
			last, lastLine = c, fset.Position(imp.End()).Line
		}
	}
	assert.Empty(t, found, "imports in three groups, in order: the standard library, other modules, this module (goimports -local %s, then move the groups)", module)
}
