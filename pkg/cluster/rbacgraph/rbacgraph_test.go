package rbacgraph

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbaceval"
)

// fixture: alice, in dev; dev edits team-a; every authenticated user views;
// alice may impersonate bob; a RoleBinding of team-b names a role that
// does not exist, and one binds someone else.
func fixture() *rbaceval.RBAC {
	group := func(n string) rbacv1.Subject { return rbacv1.Subject{Kind: "Group", Name: n} }
	user := func(n string) rbacv1.Subject { return rbacv1.Subject{Kind: "User", Name: n} }
	return &rbaceval.RBAC{
		ClusterRoles: map[string][]rbacv1.PolicyRule{
			"view":         {{APIGroups: []string{""}, Resources: []string{"pods", "configmaps"}, Verbs: []string{"get", "list"}}},
			"impersonator": {{APIGroups: []string{""}, Resources: []string{"users"}, ResourceNames: []string{"bob"}, Verbs: []string{"impersonate"}}},
		},
		Roles: map[string][]rbacv1.PolicyRule{
			"team-a/edit": {{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
				{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"*"}}},
		},
		ClusterRoleBindings: []rbacv1.ClusterRoleBinding{
			{ObjectMeta: metav1.ObjectMeta{Name: "viewers"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"},
				Subjects: []rbacv1.Subject{group("system:authenticated")}},
			{ObjectMeta: metav1.ObjectMeta{Name: "alice-as-bob"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole",
				Name: "impersonator"}, Subjects: []rbacv1.Subject{user("alice"), user("carol")}},
		},
		RoleBindings: []rbacv1.RoleBinding{
			{ObjectMeta: metav1.ObjectMeta{Name: "devs", Namespace: "team-a"}, RoleRef: rbacv1.RoleRef{Kind: "Role",
				Name: "edit"}, Subjects: []rbacv1.Subject{group("dev")}},
			{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: "team-b"}, RoleRef: rbacv1.RoleRef{Kind: "Role",
				Name: "deleted"}, Subjects: []rbacv1.Subject{user("alice")}},
			{ObjectMeta: metav1.ObjectMeta{Name: "others", Namespace: "team-a"}, RoleRef: rbacv1.RoleRef{Kind: "Role",
				Name: "edit"}, Subjects: []rbacv1.Subject{user("dave")}},
		},
	}
}

func labels(g *Graph) []string {
	var out []string
	for _, n := range g.Nodes {
		l := n.Kind.String() + " " + strings.ReplaceAll(n.Label, "\n", " | ")
		if n.Escalation != "" {
			l += " !"
		}
		out = append(out, l)
	}
	return out
}

func TestForIdentity(t *testing.T) {
	g := ForIdentity(fixture(), "alice", []string{"dev", "system:authenticated"}, rbaceval.AllNamespaces)
	assert.Equal(t, []string{
		"identity User alice",
		"group Group dev",
		"group Group system:authenticated",
		"binding ClusterRoleBinding viewers",
		"role ClusterRole view",
		"grant get, list | pods, configmaps",
		"binding ClusterRoleBinding alice-as-bob",
		"role ClusterRole impersonator",
		"grant impersonate | users | named bob !",
		"binding RoleBinding team-a/devs",
		"role Role team-a/edit",
		"grant get | secrets | in team-a !",
		"grant * | deployments.apps | in team-a !",
		"binding RoleBinding team-b/gone",
		"role Role team-b/deleted",
		"grant (the role does not exist: grants nothing)",
	}, labels(g))
	assert.Contains(t, g.Edges, Edge{From: "group:system:authenticated", To: "binding:ClusterRoleBinding//viewers"})
	assert.Contains(t, g.Edges, Edge{From: "identity:alice", To: "binding:ClusterRoleBinding//alice-as-bob"})
	assert.Contains(t, g.Edges, Edge{From: "group:dev", To: "binding:RoleBinding/team-a/devs"})
	assert.Len(t, g.Edges, 15)

	only := ForIdentity(fixture(), "alice", []string{"dev"}, rbaceval.InNamespace("team-b"))
	assert.NotContains(t, labels(only), "binding RoleBinding team-a/devs", "another namespace's")
	cluster := ForIdentity(fixture(), "alice", []string{"dev"}, rbaceval.ClusterScope)
	assert.Equal(t, []string{"identity User alice", "group Group dev", "binding ClusterRoleBinding alice-as-bob",
		"role ClusterRole impersonator", "grant impersonate | users | named bob !"}, labels(cluster))
}

func TestForGrants(t *testing.T) {
	r := fixture()
	target := rbaceval.Target{Verb: "impersonate", Resource: "users", Name: "bob"}
	g := ForGrants(target, r.WhoCan(target))
	assert.Equal(t, []string{
		"target impersonate users bob at cluster scope !",
		"binding ClusterRoleBinding alice-as-bob",
		"identity User alice",
		"identity User carol",
		"role ClusterRole impersonator",
	}, labels(g))
	assert.Len(t, g.Edges, 4)
}

func TestCheckFormat(t *testing.T) {
	for _, tt := range []struct {
		graph  bool
		format string
		err    string
	}{
		{false, "", ""}, {false, "json", ""}, {false, "wide", ""},
		{false, "svg", "-o svg draws the graph: add --graph"},
		{true, "", ""}, {true, "dot", ""}, {true, "html", ""}, {true, "json", ""},
		{true, "wide", `--graph prints -o dot (the default), svg, html or json, not "wide"`},
		{true, "yaml", `not "yaml"`},
	} {
		err := CheckFormat(tt.graph, tt.format)
		if tt.err == "" {
			assert.NoError(t, err, "%v %q", tt.graph, tt.format)
		} else {
			assert.ErrorContains(t, err, tt.err)
		}
	}
}

// hostile is a graph whose names an attacker chose (a cluster's RBAC
// objects are someone else's text).
func hostile() *Graph {
	g := newGraph(`who can "x"`)
	a := g.node(Identity, "a", "User </text><script>alert(1)</script>", "")
	b := g.node(Binding, "b", "RoleBinding \"];\nevil -> x [label=\"\\N\x1b[31m", "because <b>")
	g.edge(a, b)
	return g
}

func TestDOTEscapes(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, hostile().WriteDOT(&b))
	dot := b.String()
	assert.Contains(t, dot, `label="RoleBinding \"];\nevil -> x [label=\"\\N[31m"`)
	assert.NotContains(t, dot, "\x1b")
	assert.Equal(t, 1, strings.Count(dot, `" -> "`), "one edge: the label's arrow is text")
}

func TestSVGIsWellFormedAndEscaped(t *testing.T) {
	for _, g := range []*Graph{hostile(), ForIdentity(fixture(), "alice", []string{"dev", "system:authenticated"}, rbaceval.AllNamespaces)} {
		var b bytes.Buffer
		require.NoError(t, g.WriteSVG(&b))
		d := xml.NewDecoder(&b)
		nodes, texts := 0, ""
		for {
			tok, err := d.Token()
			if err == io.EOF {
				break
			}
			require.NoError(t, err, "well-formed XML")
			switch x := tok.(type) {
			case xml.StartElement:
				require.NotEqual(t, "script", x.Name.Local, "no element from a label")
				for _, a := range x.Attr {
					if a.Name.Local == "data-node" {
						nodes++
					}
				}
			case xml.CharData:
				texts += string(x)
			}
		}
		assert.Equal(t, len(g.Nodes), nodes, "every node drawn")
		for _, n := range g.Nodes {
			for _, l := range wrap(n.Label) {
				assert.Contains(t, texts, strings.ToValidUTF8(strings.Map(func(r rune) rune {
					if r < 0x20 && r != '\n' {
						return '\uFFFD'
					}
					return r
				}, l), ""), "the label's text")
			}
		}
	}
}

func TestWrap(t *testing.T) {
	assert.Equal(t, []string{"get, list", "a"}, wrap("get, list\na"))
	long := strings.Repeat("configmaps, ", 8)
	for _, l := range wrap(long) {
		assert.LessOrEqual(t, len(l), wrapAt)
	}
	assert.Equal(t, long, strings.Join(wrap(long), " "))
	assert.Equal(t, []string{strings.Repeat("x", wrapAt), "xx"}, wrap(strings.Repeat("x", wrapAt+2)))
}

// TestHTMLIsSelfContained: the page fetches nothing (default-src 'none'),
// runs its one script by hash, and inlines the picture.
func TestHTMLIsSelfContained(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, ForIdentity(fixture(), "alice", []string{"dev"}, rbaceval.AllNamespaces).WriteHTML(&b))
	page := b.String()
	csp := regexp.MustCompile(`content="default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-([^']+)'"`).
		FindStringSubmatch(page)
	require.NotNil(t, csp, page[:400])
	script := regexp.MustCompile(`(?s)<script>(.*)</script>`).FindStringSubmatch(page)
	require.NotNil(t, script)
	sum := sha256.Sum256([]byte(script[1]))
	assert.Equal(t, base64.StdEncoding.EncodeToString(sum[:]), csp[1], "the script's hash")
	for _, u := range regexp.MustCompile(`(?:src|href)=|https?://[^"\s]*`).FindAllString(page, -1) {
		assert.Equal(t, "http://www.w3.org/2000/svg", u, "nothing to fetch: only SVG's namespace name")
	}
	assert.Contains(t, page, `<g class="node identity" id="n0" data-node="identity:alice">`)
	if dir := os.Getenv("KI_GRAPH_OUT"); dir != "" {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "fixture.html"), b.Bytes(), 0o600))
	}
}

func TestClaims(t *testing.T) {
	g := ForIdentity(fixture(), "oidc:alice", []string{"oidc:dev", "system:authenticated"}, rbaceval.InNamespace("team-a"))
	g.Claims(map[string][]string{"email": {"alice"}, "groups": {"dev", "ops"}, "sub": {"lice"},
		"name": {"Alice"}}, "oidc:alice", []string{"oidc:dev", "system:authenticated"})
	assert.Equal(t, []string{"claim claim email: alice", "claim claim groups: dev"}, labels(g)[len(g.Nodes)-2:],
		"the claims the identity holds, after a prefix; not a suffix of a name (lice)")
	assert.Contains(t, g.Edges, Edge{From: "claim:email=alice", To: "identity:oidc:alice"})
	assert.Contains(t, g.Edges, Edge{From: "claim:groups=dev", To: "group:oidc:dev"})
}
