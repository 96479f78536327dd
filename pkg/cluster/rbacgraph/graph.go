// Package rbacgraph draws RBAC as a picture, escalation paths marked.
//
//   - access --graph: an identity, its groups, the bindings that apply to
//     them, the roles they bind and what those grant.
//   - who-can --graph: the subjects, bindings and roles that grant one
//     request.
//   - It writes DOT, an SVG laid out here (no graphviz needed), and a
//     self-contained HTML page that pans and zooms offline.
package rbacgraph

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbaceval"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/risk"
)

// Kind is a node's column, left to right.
type Kind int

const (
	Claim Kind = iota
	Identity
	Group
	Binding
	Role
	Grant
	Target
)

var kindNames = []string{"claim", "identity", "group", "binding", "role", "grant", "target"}

func (k Kind) String() string { return kindNames[k] }

// MarshalText names the kind in JSON.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Node is one box of the picture.
type Node struct {
	ID    string `json:"id"`
	Kind  Kind   `json:"kind"`
	Label string `json:"label"`
	// Escalation says why the node is an escalation path ("": it is not).
	Escalation string `json:"escalation,omitempty"`
}

// Edge goes from one node to another.
type Edge struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Graph is the picture's nodes and edges, in the order they are drawn.
type Graph struct {
	Title string `json:"title"`
	Nodes []Node `json:"nodes"`
	Edges []Edge `json:"edges"`
	index map[string]int
}

func newGraph(title string) *Graph { return &Graph{Title: title, index: map[string]int{}} }

// node adds a node once and returns its ID.
func (g *Graph) node(kind Kind, id, label, escalation string) string {
	id = kind.String() + ":" + id
	if i, ok := g.index[id]; ok {
		if g.Nodes[i].Escalation == "" {
			g.Nodes[i].Escalation = escalation
		}
		return id
	}
	g.index[id] = len(g.Nodes)
	g.Nodes = append(g.Nodes, Node{ID: id, Kind: kind, Label: label, Escalation: escalation})
	return id
}

func (g *Graph) edge(from, to string) {
	e := Edge{From: from, To: to}
	if !slices.Contains(g.Edges, e) {
		g.Edges = append(g.Edges, e)
	}
}

// Formats are the picture's -o formats: DOT (the default), an SVG image, an
// HTML page; json prints the nodes and edges.
var Formats = []string{"dot", "svg", "html"}

// CheckFormat refuses a picture's format without --graph, and a format the
// picture has not with it.
func CheckFormat(graph bool, format string) error {
	switch {
	case !graph && slices.Contains(Formats, format):
		return fmt.Errorf("-o %s draws the graph: add --graph", format)
	case graph && format != "" && format != "json" && !slices.Contains(Formats, format):
		return fmt.Errorf("--graph prints -o dot (the default), svg, html or json, not %q", format)
	}
	return nil
}

// Write writes g in format (CheckFormat's).
func (g *Graph) Write(w io.Writer, format string) error {
	switch format {
	case "", "dot":
		return g.WriteDOT(w)
	case "svg":
		return g.WriteSVG(w)
	case "html":
		return g.WriteHTML(w)
	case "json":
		b, err := json.MarshalIndent(g, "", "    ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}
	return errors.New("no such graph format: " + format)
}

// ForIdentity is access --graph's picture: the identity (user, its groups)
// and, for each binding that applies to it in scope (rbac.BindingsFor),
// the subject that matched, the binding, its role and the role's rules.
func ForIdentity(r *rbaceval.RBAC, user string, groups []string, scope rbaceval.Scope) *Graph {
	g := newGraph("RBAC of " + user)
	id := g.node(Identity, user, subjectLabel(rbacv1.Subject{Kind: rbacv1.UserKind, Name: user}), "")
	for _, grp := range groups {
		g.edge(id, g.node(Group, grp, "Group "+grp, ""))
	}
	for _, b := range r.BindingsFor(user, groups, scope) {
		bid := g.binding(b)
		for _, s := range b.Subjects {
			from := id
			if s.Kind == rbacv1.GroupKind {
				from = g.node(Group, s.Name, "Group "+s.Name, "")
			}
			g.edge(from, bid)
		}
		g.role(r, b, bid)
	}
	return g
}

// ForGrants is who-can --graph's picture: each subject of each grant, the
// binding, its role, and the request t they grant.
func ForGrants(t rbaceval.Target, grants []rbaceval.Grant) *Graph {
	what := t.Verb + " " + t.ResourceDisplay()
	if t.NonResourceURL != "" {
		what = t.Verb + " " + t.NonResourceURL
	}
	if where := t.Where(); where != "" {
		what += " " + where
	}
	g := newGraph("who can " + what)
	res := t.Resource
	if t.Subresource != "" {
		res += "/" + t.Subresource
	}
	target := g.node(Target, what, what, risk.Of(t.Verb, t.Group, res).String())
	for _, b := range grants {
		bid := g.binding(b)
		for _, s := range b.Subjects {
			kind := Identity
			if s.Kind == rbacv1.GroupKind {
				kind = Group
			}
			g.edge(g.node(kind, s.Kind+"/"+s.Namespace+"/"+s.Name, subjectLabel(s), ""), bid)
		}
		rid := g.node(Role, roleID(b), roleLabel(b), "")
		g.edge(bid, rid)
		g.edge(rid, target)
	}
	return g
}

// Claims adds the token's claims that made the identity ForIdentity drew:
// a claim whose value is the username or a group, or is it after a prefix
// (kube-apiserver's claim mappings prefix them: "oidc:", "<issuer>#"),
// points to it. What the server answered is matched, not predicted: the
// claims command predicts with the cluster's authentication
// configuration.
func (g *Graph) Claims(claims map[string][]string, user string, groups []string) {
	made := func(value, name string) bool {
		if value == "" || !strings.HasSuffix(name, value) {
			return false
		}
		prefix := strings.TrimSuffix(name, value)
		return prefix == "" || strings.HasSuffix(prefix, ":") || strings.HasSuffix(prefix, "#")
	}
	for _, claim := range slices.Sorted(maps.Keys(claims)) {
		for _, v := range claims[claim] {
			if made(v, user) {
				g.edge(g.node(Claim, claim+"="+v, "claim "+claim+": "+v, ""), Identity.String()+":"+user)
			}
			for _, grp := range groups {
				if made(v, grp) {
					g.edge(g.node(Claim, claim+"="+v, "claim "+claim+": "+v, ""), Group.String()+":"+grp)
				}
			}
		}
	}
}

func (g *Graph) binding(b rbaceval.Grant) string {
	label := b.BindingKind + " " + b.Binding
	if b.Namespace != "" {
		label = b.BindingKind + " " + b.Namespace + "/" + b.Binding
	}
	return g.node(Binding, b.BindingKind+"/"+b.Namespace+"/"+b.Binding, label, "")
}

// role adds b's role and its rules, under the binding bid.
func (g *Graph) role(r *rbaceval.RBAC, b rbaceval.Grant, bid string) {
	rules := r.RulesOf(b)
	rid := g.node(Role, roleID(b), roleLabel(b), "")
	g.edge(bid, rid)
	if rules == nil {
		g.edge(rid, g.node(Grant, roleID(b)+"/missing", "(the role does not exist: grants nothing)", ""))
		return
	}
	for i, rule := range rules {
		g.edge(rid, g.node(Grant, fmt.Sprintf("%s/%d", roleID(b), i), ruleLabel(rule, b.Namespace),
			risk.OfRule(rule).String()))
	}
}

func roleID(b rbaceval.Grant) string {
	if b.RoleKind == "ClusterRole" {
		return "ClusterRole/" + b.Role
	}
	return "Role/" + b.Namespace + "/" + b.Role
}

func roleLabel(b rbaceval.Grant) string {
	if b.RoleKind == "ClusterRole" {
		return "ClusterRole " + b.Role
	}
	return "Role " + b.Namespace + "/" + b.Role
}

func subjectLabel(s rbacv1.Subject) string {
	if s.Kind == rbacv1.ServiceAccountKind {
		return "ServiceAccount " + s.Namespace + "/" + s.Name
	}
	return s.Kind + " " + s.Name
}

// ruleLabel is a rule in one or more lines: its verbs, then what they
// apply to, and where (a RoleBinding's namespace).
func ruleLabel(p rbacv1.PolicyRule, namespace string) string {
	var what []string
	for _, res := range p.Resources {
		for _, grp := range p.APIGroups {
			if grp != "" {
				what = append(what, res+"."+grp)
			} else {
				what = append(what, res)
			}
		}
	}
	what = append(what, p.NonResourceURLs...)
	label := strings.Join(p.Verbs, ", ") + "\n" + strings.Join(what, ", ")
	if len(p.ResourceNames) > 0 {
		label += "\nnamed " + strings.Join(p.ResourceNames, ", ")
	}
	if namespace != "" && len(p.Resources) > 0 {
		label += "\nin " + namespace
	}
	return label
}
