package repo

import (
	"go/ast"
	"go/parser"
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

// brokenMidThought lists where f breaks a line inside one thought: a
// function's result list over two lines ("(string, bool,\n error)"), or an
// assignment's left side ("b, _,\n err :=").
func brokenMidThought(fset *token.FileSet, path string, f *ast.File) []string {
	var out []string
	line := func(p token.Pos) int { return fset.Position(p).Line }
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncType:
			if r := n.Results; r != nil && r.Opening.IsValid() && line(r.Opening) != line(r.Closing) {
				out = append(out, path+":"+strconv.Itoa(line(r.Opening))+": a result list over two lines")
			}
		case *ast.AssignStmt:
			if line(n.Lhs[0].Pos()) != line(n.Lhs[len(n.Lhs)-1].End()) {
				out = append(out, path+":"+strconv.Itoa(line(n.Pos()))+": the left side of an assignment over two lines")
			}
		}
		return true
	})
	return out
}

// TestNothingBrokenMidThought: no production signature is broken inside
// its result list, and no assignment inside its left side (break before
// the first parameter, golines-style, or after the operator). A planted
// file with each is found.
func TestNothingBrokenMidThought(t *testing.T) {
	var found []string
	for _, f := range productionFiles(t) {
		found = append(found, brokenMidThought(f.fset, f.path, f.file)...)
	}
	assert.Empty(t, found, "break before the first parameter: func f(\\n\\targs,\\n) (results) {")
	plant := "package p\n\nfunc f() (string, bool,\n\terror) {\n\tb, _,\n\t\terr := g()\n\treturn b, false, err\n}\n"
	fset := token.NewFileSet()
	pf, err := parser.ParseFile(fset, "plant.go", plant, 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"plant.go:3: a result list over two lines",
		"plant.go:5: the left side of an assignment over two lines"}, brokenMidThought(fset, "plant.go", pf))
}
