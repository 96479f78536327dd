package repo

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/kubectl-impersonate/kubectl-impersonate"

// trackedFiles are the repository's files git knows, matching patterns.
func trackedFiles(t *testing.T, patterns ...string) []string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", docRoot, "ls-files", "--"}, patterns...)...).Output()
	require.NoError(t, err)
	files := strings.Fields(string(out))
	require.NotEmpty(t, files, "git ls-files %v", patterns)
	return files
}

// goPackage is one of the module's packages: its import path, its doc
// comment's first sentence (go list's Doc) and its imports.
type goPackage struct {
	ImportPath, Doc string
	Imports         []string
}

// listPackages lists the module's packages once for all the tests.
var listPackages = sync.OnceValues(func() ([]goPackage, error) {
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{join .Imports \" \"}}\t{{.Doc}}", module+"/...")
	cmd.Dir = docRoot
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	var pkgs []goPackage
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) != 3 {
			return nil, fmt.Errorf("go list printed %q", line)
		}
		pkgs = append(pkgs, goPackage{ImportPath: f[0], Imports: strings.Fields(f[1]), Doc: f[2]})
	}
	return pkgs, nil
})

func goPackages(t *testing.T) []goPackage {
	t.Helper()
	pkgs, err := listPackages()
	require.NoError(t, err, "go list")
	require.Greater(t, len(pkgs), 40, "the module's packages")
	return pkgs
}

// TestPackageDocs: every package says what it is (issue 48: seven did
// not), in a doc comment go doc shows.
func TestPackageDocs(t *testing.T) {
	var missing []string
	for _, p := range goPackages(t) {
		if strings.TrimSpace(p.Doc) == "" {
			missing = append(missing, strings.TrimPrefix(p.ImportPath, module+"/"))
		}
	}
	assert.Empty(t, missing, "packages without a package doc comment")
}

// TestNoSameNameImport: no package imports another of the module's
// packages of its own name (issue 48: the access commands' package,
// named inspect, imported pkg/cluster/inspect: a reader must tell them apart by
// import path alone).
func TestNoSameNameImport(t *testing.T) {
	var same []string
	for _, p := range goPackages(t) {
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module+"/") && path.Base(imp) == path.Base(p.ImportPath) {
				same = append(same, p.ImportPath+" imports "+imp)
			}
		}
	}
	assert.Empty(t, same)
}

// TestOurCodeOnly: this project's code is written here; another project's
// comes in as a module (issue 48: a package of internal/ was
// k8s.io/apiserver's impersonation filter, copied). No tracked file carries another
// project's copyright or license header, and internal/ holds test peers
// only: no production package imports it.
func TestOurCodeOnly(t *testing.T) {
	header := regexp.MustCompile(`(?m)^\s*(//|#)?\s*(Copyright .*(The Kubernetes Authors|Google|The Go Authors)|Licensed under the Apache License)`)
	var copied []string
	for _, f := range trackedFiles(t) {
		if strings.HasSuffix(f, "LICENSE") || strings.HasSuffix(f, "go.sum") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(docRoot, f))
		require.NoError(t, err)
		if header.Match(b) {
			copied = append(copied, f)
		}
	}
	assert.Empty(t, copied, "files with another project's copyright or license header")
	for _, p := range goPackages(t) {
		rel := strings.TrimPrefix(p.ImportPath, module+"/")
		if !strings.HasPrefix(rel, "pkg/") && !strings.HasPrefix(rel, "cmd/") {
			continue
		}
		for _, imp := range p.Imports {
			assert.False(t, strings.HasPrefix(imp, module+"/internal/"), "%s (production) imports %s: internal/ is for test peers", rel, imp)
		}
	}
}

// repoPath is a path of the repository named in prose: a top-level
// directory of ours, then its components.
var repoPath = regexp.MustCompile(`(^|[^\w./-])((?:pkg|internal|cmd|test|hack|docs|deploy|krew)/[A-Za-z0-9_.\-/]*[A-Za-z0-9_])`)

// upstream marks prose that names another project's path (kube-apiserver's
// pkg/endpoints/..., k8s.io/kubernetes pkg/...).
// upstreamReach is how far before a path an upstream marker qualifies it.
const upstreamReach = 48

var upstream = regexp.MustCompile(`k8s\.io/|Kubernetes'|kube-apiserver's|cli-runtime's|client-go's|kubelet`)

// staleNames are the repository paths that prose (comments of Go, shell
// and Python files; Markdown) names and that do not exist. A component
// in capitals is a placeholder (test/e2e/tools/kube-MINOR).
func staleNames(t *testing.T, files []string) []string {
	t.Helper()
	placeholder := regexp.MustCompile(`[A-Z]{3,}`)
	var stale []string
	for _, f := range files {
		name := f
		if !filepath.IsAbs(f) {
			name = filepath.Join(docRoot, f)
		}
		b, err := os.ReadFile(name)
		require.NoError(t, err)
		lines := strings.Split(string(b), "\n")
		for i, line := range lines {
			prose := line
			switch filepath.Ext(f) {
			case ".go":
				j := strings.Index(line, "//")
				if j < 0 {
					continue
				}
				prose = line[j:]
			case ".sh", ".py":
				j := strings.Index(line, "#")
				if j < 0 {
					continue
				}
				prose = line[j:]
			}
			above := ""
			if i > 0 {
				above = lines[i-1] + "\n"
			}
			for _, m := range repoPath.FindAllStringSubmatchIndex(prose, -1) {
				p := strings.TrimRight(prose[m[4]:m[5]], ".")
				// The upstream exception is the match's own: a marker in
				// the words just before this path (on its line, or the end
				// of the line above), not anywhere near it (issue 57: a
				// marker two lines up hid a stale path in a package doc).
				before := above + prose[:m[4]]
				if placeholder.MatchString(p) || upstream.MatchString(before[max(0, len(before)-upstreamReach):]) {
					continue
				}
				if _, err := os.Stat(filepath.Join(docRoot, p)); err != nil {
					stale = append(stale, f+":"+strconv.Itoa(i+1)+": "+p)
				}
			}
		}
	}
	return stale
}

// TestNamesInProseExist: the files and packages comments and documents
// name exist (issue 48: seven named what had moved).
func TestNamesInProseExist(t *testing.T) {
	files := trackedFiles(t, "*.go", "*.md", "*.sh", "*.py")
	assert.Empty(t, staleNames(t, files), "names of files or packages that moved: say where they are now")
	// The rule can fail: a planted stale name is found.
	dir := t.TempDir()
	planted := filepath.Join(dir, "planted.go")
	moved := "pkg/cmd/" + "inspect"
	require.NoError(t, os.WriteFile(planted, []byte("package x\n\n// See "+moved+" for it.\n"), 0o600))
	assert.Equal(t, []string{planted + ":3: " + moved}, staleNames(t, []string{planted}))
	// An upstream marker qualifies its own path, not a stale one after it
	// (pkg/cmd/privilege/doc.go on f0d971a's tree).
	require.NoError(t, os.WriteFile(planted, []byte("package x\n\n// Parsed with kube-apiserver's own code, "+
		"written\n// through pkg/cluster/auditlog and "+moved+".\n"), 0o600))
	assert.Equal(t, []string{planted + ":4: " + moved}, staleNames(t, []string{planted}))
}

// TestOneOfEachHelper: one notice printer (pkg/host/logging's Notice: the
// plugin's prefix, escaped, on one line), one JWT decoder (pkg/idp/jwtclaims)
// and one bounded-parallel helper (errgroup's SetLimit) in the production
// code (issue 48: the notice was formatted in five places, one of them
// unescaped; session.Subject decoded a JWT by hand; bounded loops were
// written with semaphores of their own).
func TestOneOfEachHelper(t *testing.T) {
	files := productionFiles(t)
	for _, tt := range []struct {
		what    string
		owners  []string
		pattern *regexp.Regexp
	}{
		// The prefix itself, in any message (issue 57: sixteen notices
		// built it by hand, beside the one spelling the rule matched).
		{"the notice line", []string{"pkg/host/logging"}, regexp.MustCompile(`"kubectl-impersonate: `)},
		{"a JWT's base64url decoding", []string{"pkg/idp/jwtclaims"}, regexp.MustCompile(`RawURLEncoding\.DecodeString`)},
		// The proxy's limit of requests in flight, and the window of
		// namespaces whose answers stream in order (pkg/cluster/inspect's
		// matrices), are not parallel loops.
		{"a semaphore of its own", []string{"pkg/server/proxy", "pkg/cluster/inspect"}, regexp.MustCompile(`make\(chan struct\{\}, `)},
		// Discovery has one owner: pkg/cluster/resource reads it (kubeapi's
		// ServerResources, kubectl's cache), warns of a partial answer and
		// retries a miss in the cache (Resolve).
		{"a read of discovery", []string{"pkg/cluster/resource", "pkg/cluster/kubeapi"}, regexp.MustCompile(`\.ServerResources\(`)},
		{"discovery's retry", []string{"pkg/cluster/resource"}, regexp.MustCompile(`\.Invalidate\(\)`)},
		{"discovery's partial answer", []string{"pkg/cluster/resource"}, regexp.MustCompile(`\*resource\.PartialDiscoveryError|\*PartialDiscoveryError`)},
		// Risk has one owner (issue 56: rbac.Escalation, usage.Reaches and
		// the graph's wildcard rule disagreed): risk.Of and risk.OfRule;
		// no other function says what is dangerous, nor phrases it.
		{"a risk verdict", []string{"pkg/cluster/risk"}, regexp.MustCompile(`func \(?\w*\)? ?\w*(Reaches|Escalation|Risk|Dangerous)\w*\([^)]*\) (string|bool|risk\.Risk)|"an escalation path|"a path to |reads Secrets`)},
		// Which bindings apply to an identity has one walker (issue 57:
		// rbac.RulesFor and the graph's bindingsFor, which differed):
		// rbaceval.BindingsFor.
		{"a walk of the bindings", []string{"pkg/cluster/rbaceval"}, regexp.MustCompile(`\.AppliesTo\(|range \w+\.ClusterRoleBindings`)},
		// The kuberc's places have one owner (issue 57: the exec-entry
		// lock built them beside kuberc.Path): kuberc.Candidates.
		{"a kuberc's place", []string{"pkg/host/kuberc"}, regexp.MustCompile(`"\.kube", "kuberc"|"KUBERC"`)},
		// The streaming rule (exec, attach and port-forward need get and
		// create since 1.35) has one owner: risk.StreamingPair.
		{"the streaming verbs' pairing", []string{"pkg/cluster/risk"}, regexp.MustCompile(`"get": "create", "create": "get"`)},
	} {
		var found []string
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(docRoot, f.path))
			require.NoError(t, err)
			if tt.pattern.Match(b) && !slices.Contains(tt.owners, f.pkg) {
				found = append(found, f.path)
			}
		}
		assert.Empty(t, found, "%s outside %s", tt.what, tt.owners)
	}
}

var update = flag.Bool("update", false, "rewrite docs/testing.md's package map (make docs)")

const (
	mapStart = "<!-- the package map: make docs writes it from each package's doc comment -->\n"
	mapEnd   = "<!-- end of the package map -->\n"
)

// packageMap is the table of the binaries' and packages' doc comments'
// first sentences: commands, then pkg/, then internal/.
func packageMap(t *testing.T) string {
	t.Helper()
	var rows [3][]string
	for _, p := range goPackages(t) {
		rel := strings.TrimPrefix(p.ImportPath, module+"/")
		var group int
		switch {
		case strings.HasPrefix(rel, "cmd/"):
			group = 0
		case strings.HasPrefix(rel, "pkg/"):
			group = 1
		case strings.HasPrefix(rel, "internal/"):
			group = 2
		default:
			continue
		}
		doc := regexp.MustCompile(`^(Package|Command) \S+ `).ReplaceAllString(p.Doc, "")
		doc = strings.ReplaceAll(doc, "|", "\\|")
		rows[group] = append(rows[group], "| `"+rel+"` | "+doc+" |")
	}
	var b strings.Builder
	b.WriteString(mapStart + "| package | what it is (its doc comment) |\n| --- | --- |\n")
	for _, g := range rows {
		slices.Sort(g)
		for _, r := range g {
			b.WriteString(r + "\n")
		}
	}
	b.WriteString(mapEnd)
	return b.String()
}

// TestPackageMapIsCurrent: docs/testing.md's map of the code is written
// from the package docs, so it cannot go stale (issue 48: a hand-written
// map named packages that had moved); make docs rewrites it.
func TestPackageMapIsCurrent(t *testing.T) {
	path := filepath.Join(docRoot, "docs/testing.md")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	doc := string(b)
	i, j := strings.Index(doc, mapStart), strings.Index(doc, mapEnd)
	require.True(t, i >= 0 && j > i, "docs/testing.md holds the package map's markers")
	want := packageMap(t)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(doc[:i]+want+doc[j+len(mapEnd):]), 0o644))
		return
	}
	assert.Equal(t, want, doc[i:j+len(mapEnd)], "docs/testing.md's package map is stale: make docs")
}

// TestOneTestHelper: what several packages' tests need is written once,
// in internal/testkit: a free loopback port (listen on port 0, close,
// keep the number), a buffer safe for a writer and a reader at once, and
// kubelogin's kubeconfig (the migration's and the attack tests' input).
func TestOneTestHelper(t *testing.T) {
	for _, tt := range []struct {
		what    string
		pattern *regexp.Regexp
	}{
		{"a free port of its own", regexp.MustCompile(`(?s)net\.Listen\("tcp", "127\.0\.0\.1:0"\)[^}]{0,120}\.Port[^}]{0,80}Close\(\)|(?s)net\.Listen\("tcp", "127\.0\.0\.1:0"\)[^}]{0,120}Close\(\)[^}]{0,120}\.Port`)},
		{"a kubelogin kubeconfig of its own", regexp.MustCompile(`args: \[oidc-login, get-token`)},
		{"a synchronised buffer of its own", regexp.MustCompile(`(?s)struct \{\s*mu\s+sync\.Mutex\s+b\s+(bytes\.Buffer|strings\.Builder)\s*\}`)},
	} {
		var found []string
		for _, f := range trackedFiles(t, "*_test.go", "internal/*.go", "test/*.go") {
			if strings.HasPrefix(f, "internal/testkit/") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(docRoot, f))
			require.NoError(t, err)
			if tt.pattern.Match(b) {
				found = append(found, f)
			}
		}
		assert.Empty(t, found, "%s: use internal/testkit", tt.what)
	}
}
