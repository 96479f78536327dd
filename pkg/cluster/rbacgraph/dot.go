package rbacgraph

import (
	"fmt"
	"io"
	"strings"
)

// shapes and colours of the kinds, in DOT and SVG alike.
var (
	fills = []string{"#f5f3ff", "#dbeafe", "#e0e7ff", "#fef3c7", "#dcfce7", "#f3f4f6", "#fce7f3"}
	// escalationFill and escalationStroke mark an escalation path.
	escalationFill   = "#fee2e2"
	escalationStroke = "#dc2626"
)

// WriteDOT writes g as a Graphviz digraph, left to right, one rank per
// kind; escalation paths red, with the reason as the tooltip.
func (g *Graph) WriteDOT(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph rbac {\n  label=%s;\n  labelloc=t;\n  rankdir=LR;\n", dotString(g.Title))
	b.WriteString("  node [shape=box, style=\"rounded,filled\", fontname=\"sans-serif\", fontsize=11];\n")
	for _, n := range g.Nodes {
		attrs := fmt.Sprintf("label=%s, fillcolor=%q, class=%q", dotString(n.Label), fills[n.Kind], n.Kind.String())
		if n.Escalation != "" {
			attrs = fmt.Sprintf("label=%s, fillcolor=%q, color=%q, penwidth=2, tooltip=%s, class=%q",
				dotString(n.Label), escalationFill, escalationStroke, dotString("escalation: "+n.Escalation),
				n.Kind.String()+" escalation")
		}
		fmt.Fprintf(&b, "  %s [%s];\n", dotString(n.ID), attrs)
	}
	for k := Claim; k <= Target; k++ {
		var ids []string
		for _, n := range g.Nodes {
			if n.Kind == k {
				ids = append(ids, dotString(n.ID))
			}
		}
		if len(ids) > 0 {
			fmt.Fprintf(&b, "  { rank=same; %s; }\n", strings.Join(ids, "; "))
		}
	}
	for _, e := range g.Edges {
		fmt.Fprintf(&b, "  %s -> %s;\n", dotString(e.From), dotString(e.To))
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// dotString is s as a DOT quoted string: quotes and backslashes escaped
// (Graphviz reads \N, \G, \l... in labels otherwise), a newline as \n,
// other control characters dropped.
func dotString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
