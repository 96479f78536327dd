package repo

import (
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxLineWidth is the widest production line, a tab counted as tabWidth
// columns (gofmt's indentation as most editors show it).
const (
	maxLineWidth = 120
	tabWidth     = 4
)

// lineWidth is line's width in columns: runes, a tab as tabWidth.
func lineWidth(line string) int {
	return utf8.RuneCountInString(line) + strings.Count(line, "\t")*(tabWidth-1)
}

// TestLineLength: no production line is wider than maxLineWidth, except
// two kinds, counted: the lines of a raw string literal (help examples, a
// page, a pattern: what they hold is printed or matched as written) and a
// line holding a URL (cut, it could not be copied).
func TestLineLength(t *testing.T) {
	var found []string
	excepted := map[string]int{}
	for _, f := range productionFiles(t) {
		b, err := os.ReadFile(filepath.Join(docRoot, f.path))
		require.NoError(t, err)
		raw := map[int]bool{}
		ast.Inspect(f.file, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && strings.HasPrefix(lit.Value, "`") {
				for l := f.fset.Position(lit.Pos()).Line; l <= f.fset.Position(lit.End()).Line; l++ {
					raw[l] = true
				}
			}
			return true
		})
		for i, line := range strings.Split(string(b), "\n") {
			if lineWidth(line) <= maxLineWidth {
				continue
			}
			switch {
			case raw[i+1]:
				excepted["in a raw string literal"]++
			case strings.Contains(line, "://"):
				excepted["holding a URL"]++
			default:
				found = append(found, f.path+":"+strconv.Itoa(i+1))
			}
		}
	}
	t.Logf("lines over %d columns excepted: %v", maxLineWidth, excepted)
	assert.Empty(t, found, "production lines over %d columns (a tab is %d): break them after a comma or an operator, "+
		"or split the string (\"a \" +\\n\"b\")", maxLineWidth, tabWidth)
}
