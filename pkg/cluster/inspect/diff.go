package inspect

import (
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbac"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/risk"
)

// diffMatrices keeps the rows and cells where a and b answer differently; the cell
// is b's answer (so ✔ means: the other identity may, this one may not).
// So with the escalation cells and the impersonate-on rows.
func diffMatrices(a, b *rbac.Matrix) *rbac.Matrix {
	d := &rbac.Matrix{Namespace: a.Namespace, Verbs: a.Verbs, Requests: a.Requests + b.Requests,
		Incomplete: a.Incomplete || b.Incomplete}
	d.Rows = diffRows(a.Verbs, a.Rows, b.Rows)
	for i, ea := range a.Escalation {
		if i < len(b.Escalation) && !sameAnswer(ea.Cell, b.Escalation[i].Cell) {
			d.Escalation = append(d.Escalation, b.Escalation[i])
		}
	}
	for _, mode := range risk.ImpersonationModes {
		ra, rb := a.ImpersonateOn[mode], b.ImpersonateOn[mode]
		if ra == nil && rb == nil {
			continue
		}
		if ra == nil {
			ra = deniedRows(rb)
		}
		if rb == nil {
			rb = deniedRows(ra)
		}
		if rows := diffRows(a.Verbs, ra, rb); len(rows) > 0 {
			if d.ImpersonateOn == nil {
				d.ImpersonateOn = map[string][]rbac.Row{}
			}
			d.ImpersonateOn[mode] = rows
		}
	}
	return d
}

// deniedRows is rows with every applicable cell denied: the impersonate-on
// rows of an identity that does not hold the mode.
func deniedRows(rows []rbac.Row) []rbac.Row {
	out := make([]rbac.Row, len(rows))
	for i, r := range rows {
		out[i] = rbac.Row{Resource: r.Resource, Cells: map[string]rbac.Cell{}}
		for v, c := range r.Cells {
			if c.Source != rbac.NotApplicable {
				c = rbac.Cell{Source: c.Source}
			}
			out[i].Cells[v] = c
		}
	}
	return out
}

func diffRows(verbs []string, a, b []rbac.Row) []rbac.Row {
	var out []rbac.Row
	for i, ra := range a {
		rb := b[i]
		row := rbac.Row{Resource: ra.Resource, Cells: map[string]rbac.Cell{}}
		differs := false
		for _, v := range verbs {
			if !sameAnswer(ra.Cells[v], rb.Cells[v]) {
				row.Cells[v] = rb.Cells[v]
				differs = true
			} else {
				row.Cells[v] = rbac.Cell{Source: rbac.NotApplicable}
			}
		}
		if differs {
			out = append(out, row)
		}
	}
	return out
}

// sameAnswer says two cells answer alike (allowed, or for some names).
func sameAnswer(a, b rbac.Cell) bool { return a.Allowed == b.Allowed && a.Partial == b.Partial }
