package rbacgraph

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// The layout's measures, in pixels (11 px sans-serif).
const (
	charWidth = 6.6
	lineH     = 15
	padX      = 10
	padY      = 7
	gapX      = 90
	gapY      = 14
	margin    = 20
	titleH    = 30
	// wrapAt is the longest line of a box, in characters.
	wrapAt = 48
)

// box is a node laid out.
type box struct {
	n          Node
	lines      []string
	x, y, w, h float64
}

// layout places the nodes in one column per kind, left to right, each
// column ordered by where the nodes that point to it are (the barycentre
// heuristic: fewer crossings), and the columns centred on the tallest.
func (g *Graph) layout() (boxes []*box, byID map[string]*box, width, height float64) {
	byID = map[string]*box{}
	var columns [][]*box
	for k := Claim; k <= Target; k++ {
		var col []*box
		for _, n := range g.Nodes {
			if n.Kind == k {
				b := &box{n: n, lines: wrap(n.Label)}
				longest := 0
				for _, l := range b.lines {
					longest = max(longest, utf8.RuneCountInString(l))
				}
				b.w = max(80, float64(longest)*charWidth+2*padX)
				b.h = float64(len(b.lines))*lineH + 2*padY
				col = append(col, b)
				byID[n.ID] = b
			}
		}
		if len(col) > 0 {
			columns = append(columns, col)
		}
	}
	into := map[string][]string{}
	for _, e := range g.Edges {
		into[e.To] = append(into[e.To], e.From)
	}
	rank := map[string]float64{}
	x, tallest := float64(margin), 0.0
	for ci, col := range columns {
		if ci > 0 {
			bary := func(b *box) float64 {
				sum, n := 0.0, 0
				for _, from := range into[b.n.ID] {
					if r, ok := rank[from]; ok {
						sum += r
						n++
					}
				}
				if n == 0 {
					return 1e9
				}
				return sum / float64(n)
			}
			slices.SortStableFunc(col, func(a, b *box) int { return cmp.Compare(bary(a), bary(b)) })
		}
		colW, y := 0.0, 0.0
		for i, b := range col {
			rank[b.n.ID] = float64(i)
			b.x, b.y = x, y
			y += b.h + gapY
			colW = max(colW, b.w)
		}
		tallest = max(tallest, y-gapY)
		x += colW + gapX
	}
	for _, col := range columns {
		last := col[len(col)-1]
		shift := margin + titleH + (tallest-(last.y+last.h))/2
		for _, b := range col {
			b.y += shift
			boxes = append(boxes, b)
		}
	}
	return boxes, byID, x - gapX + margin, tallest + 2*margin + titleH
}

// wrap splits a label into lines of at most wrapAt characters, at ", "
// where it can.
func wrap(label string) []string {
	var out []string
	for _, line := range strings.Split(label, "\n") {
		for utf8.RuneCountInString(line) > wrapAt {
			cut := strings.LastIndex(string([]rune(line)[:wrapAt]), ", ")
			if cut <= 0 {
				cut = len(string([]rune(line)[:wrapAt]))
				out, line = append(out, line[:cut]), line[cut:]
				continue
			}
			out, line = append(out, line[:cut+1]), line[cut+2:]
		}
		out = append(out, line)
	}
	return out
}

// WriteSVG writes g as an SVG image laid out here: no graphviz needed.
func (g *Graph) WriteSVG(w io.Writer) error {
	_, err := w.Write(g.svg())
	return err
}

func (g *Graph) svg() []byte {
	boxes, byID, width, height := g.layout()
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" `+
		`font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" ` +
		`orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#64748b"/></marker></defs>` + "\n")
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="14" font-weight="bold">%s</text>`+"\n", margin, margin+8,
		escape(g.Title))
	for _, e := range g.Edges {
		from, to := byID[e.From], byID[e.To]
		if from == nil || to == nil {
			continue
		}
		x1, y1, x2, y2 := from.x+from.w, from.y+from.h/2, to.x, to.y+to.h/2
		fmt.Fprintf(&b, `<path class="edge" d="M%.1f,%.1f C%.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="none" `+
			`stroke="#94a3b8" stroke-width="1.2" marker-end="url(#arrow)"/>`+"\n",
			x1, y1, x1+gapX/2, y1, x2-gapX/2, y2, x2, y2)
	}
	for i, bx := range boxes {
		fill, stroke, width, class := fills[bx.n.Kind], "#64748b", 1.0, bx.n.Kind.String()
		title := bx.n.Label
		if bx.n.Escalation != "" {
			fill, stroke, width, class = escalationFill, escalationStroke, 2.5, class+" escalation"
			title += "\nescalation: " + bx.n.Escalation
		}
		fmt.Fprintf(&b, `<g class="node %s" id="n%d" data-node="%s"><title>%s</title>`, class, i,
			escape(bx.n.ID), escape(title))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="6" fill="%s" stroke="%s" `+
			`stroke-width="%.1f"/>`, bx.x, bx.y, bx.w, bx.h, fill, stroke, width)
		for li, l := range bx.lines {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`, bx.x+padX, bx.y+padY+float64(li+1)*lineH-4,
				escape(l))
		}
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// escape is s as XML text or attribute value, as encoding/xml's
// EscapeText writes it (whose package initialisers every start of the
// binary would pay): the five markup characters as references, a newline
// and a tab as character references, and what XML cannot hold (other
// controls, invalid UTF-8) as U+FFFD.
func escape(s string) string {
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '"':
			b.WriteString("&#34;")
		case r == '\'':
			b.WriteString("&#39;")
		case r == '\n':
			b.WriteString("&#xA;")
		case r == '\t':
			b.WriteString("&#x9;")
		case r < 0x20 || r == 0xfffe || r == 0xffff || (r >= 0xd800 && r <= 0xdfff):
			b.WriteRune('\uFFFD')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
