package repo

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxFirstSentence is the most words the first sentence of a package's doc
// or a security entry point's may have: what it is, said at once; the
// rules follow as a list (pkg/server/authn's shape).
const maxFirstSentence = 25

// securityEntryPoints are the functions every token, trust decision or
// secret file goes through (docs/security.md), as package path and name
// (Type.Method for a method).
var securityEntryPoints = map[string][]string{
	"pkg/token/credspec":      {"Spec.Admit"},
	"pkg/credential/session":  {"Session.Gate"},
	"pkg/server/identity":     {"ReadHeaders", "Filter", "ForwardedAs", "Forwardable"},
	"pkg/host/safefile":       {"Write", "ReadRegular", "OpenAppend"},
	"pkg/cluster/auditlog":    {"Read", "ImpersonationChecks", "DecisionOf"},
	"pkg/cluster/rolegen":     {"Generate"},
	"pkg/cluster/rbaceval":    {"RBAC.BindingsFor"},
	"pkg/server/attributes":   {"Of"},
	"pkg/token/tokensource":   {"Source.Get", "Source.Cached"},
	"pkg/credential/settings": {"ParseArgs"},
}

// longFirstSentence is the words of doc's first sentence, when over
// maxFirstSentence.
func longFirstSentence(text string) int {
	var p doc.Package
	if n := len(strings.Fields(p.Synopsis(text))); n > maxFirstSentence {
		return n
	}
	return 0
}

// entryPointDocs finds each named function of f and returns its doc's
// first sentence's words when too long, "missing" when it has no doc.
func entryPointDocs(f *ast.File, names []string, found map[string]bool) map[string]int {
	out := map[string]int{}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		name := fd.Name.Name
		if fd.Recv != nil {
			t := fd.Recv.List[0].Type
			if st, ok := t.(*ast.StarExpr); ok {
				t = st.X
			}
			if id, ok := t.(*ast.Ident); ok {
				name = id.Name + "." + name
			}
		}
		for _, n := range names {
			if n != name {
				continue
			}
			found[n] = true
			switch {
			case fd.Doc == nil:
				out[name] = -1
			case longFirstSentence(fd.Doc.Text()) > 0:
				out[name] = longFirstSentence(fd.Doc.Text())
			}
		}
	}
	return out
}

// TestDocsSayWhatFirst: every package's doc and every security entry
// point's says what it is in a first sentence of at most 25 words (issue
// 57: Session.Gate's was 127, credspec.Admit's 100, the proxy's package
// doc 151), the rules after it. A planted 30-word sentence is found.
func TestDocsSayWhatFirst(t *testing.T) {
	var long []string
	for _, p := range goPackages(t) {
		rel := strings.TrimPrefix(p.ImportPath, module+"/")
		if !strings.HasPrefix(rel, "pkg/") && !strings.HasPrefix(rel, "cmd/") {
			continue // production packages; the tests' own helpers say more
		}
		if n := len(strings.Fields(p.Doc)); n > maxFirstSentence {
			long = append(long, rel+": "+strconv.Itoa(n)+" words")
		}
	}
	found := map[string]bool{}
	for _, f := range productionFiles(t) {
		names, ok := securityEntryPoints[f.pkg]
		if !ok {
			continue
		}
		// productionFiles' syntax has no comments.
		withDocs, err := parser.ParseFile(token.NewFileSet(), filepath.Join(docRoot, f.path), nil, parser.ParseComments)
		require.NoError(t, err)
		seen := map[string]bool{}
		for name, n := range entryPointDocs(withDocs, names, seen) {
			long = append(long, f.pkg+"."+name+": "+strconv.Itoa(n)+" words (-1: no doc)")
		}
		for n := range seen {
			found[f.pkg+"."+n] = true
		}
	}
	assert.Empty(t, long, "a first sentence of at most %d words, then the rules as a list", maxFirstSentence)
	for pkg, names := range securityEntryPoints {
		for _, n := range names {
			assert.True(t, found[pkg+"."+n], "the entry point %s.%s exists", pkg, n)
		}
	}
	plant := "package p\n\n// F " + strings.Repeat("word ", 29) + "end.\n//\n//   - a rule.\nfunc F() {}\n"
	pf, err := parser.ParseFile(token.NewFileSet(), "plant.go", plant, parser.ParseComments)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"F": 31}, entryPointDocs(pf, []string{"F"}, map[string]bool{}))
}
