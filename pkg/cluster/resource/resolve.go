package resource

import (
	"fmt"
	"slices"
	"strings"
)

// ResolveResource finds the resource typed names among all (discovery),
// as kubectl resolves a resource argument: its plural, singular, kind or a
// short name, optionally qualified by its group ("deployments.apps") or
// version and group ("deployments.v1.apps"). Several matches prefer the
// core group, as kubectl's RESTMapper does. An unknown name is an error
// that names the closest resource served.
func ResolveResource(all []Resource, typed string) (Resource, error) {
	name, group, hasGroup := strings.Cut(strings.ToLower(typed), ".")
	version := ""
	// As kubectl's schema.ParseResourceArg: two dots or more are
	// resource.version.group, one is resource.group ("pods.v1" is the
	// group "v1", which no server serves).
	if v, g, ok := strings.Cut(group, "."); ok && looksLikeVersion(v) {
		version, group = v, g
	}
	candidates := func(match func(Resource) bool) []Resource {
		var found []Resource
		for _, r := range all {
			if strings.Contains(r.Name, "/") || (hasGroup && r.Group != group) ||
				(version != "" && r.Version != version) {
				continue
			}
			if match(r) {
				found = append(found, r)
			}
		}
		return found
	}
	// kubectl's order: the plural or singular name (the kind, lowercased,
	// where a server gives no singular), then short names; among several,
	// discovery's priority (the core group, then built-in groups before a
	// CRD's), so that a CRD cannot take a built-in's name.
	found := candidates(func(r Resource) bool {
		singular := r.SingularName
		if singular == "" {
			singular = strings.ToLower(r.Kind)
		}
		return r.Name == name || singular == name
	})
	if len(found) == 0 {
		found = candidates(func(r Resource) bool { return slices.Contains(r.ShortNames, name) })
	}
	if len(found) == 0 {
		msg := fmt.Sprintf("the server does not serve a resource %q", typed)
		if c := closest(all, name); c != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", c)
		}
		return Resource{}, fmt.Errorf("%s: see kubectl api-resources", msg)
	}
	return slices.MinFunc(found, func(a, b Resource) int { return a.Priority - b.Priority }), nil
}

// looksLikeVersion is an API version: v1, v2beta1, v1alpha3.
func looksLikeVersion(s string) bool {
	rest, ok := strings.CutPrefix(s, "v")
	digits := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
	if !ok || digits == 0 || rest[0] == '0' {
		return false
	}
	rest = rest[digits:]
	if rest == "" {
		return true
	}
	for _, q := range []string{"alpha", "beta"} {
		if n, ok := strings.CutPrefix(rest, q); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			return true
		}
	}
	return false
}

// closest is the served resource name nearest to name (edit distance at
// most 2, or a prefix of at least 3 letters), "" when none is close.
func closest(all []Resource, name string) string {
	best, bestD := "", 3
	for _, r := range all {
		if strings.Contains(r.Name, "/") {
			continue
		}
		for _, cand := range append([]string{r.Name, r.SingularName, strings.ToLower(r.Kind)}, r.ShortNames...) {
			if cand == "" {
				continue
			}
			d := editDistance(name, cand)
			if len(name) >= 3 && strings.HasPrefix(cand, name) {
				d = min(d, 1)
			}
			if d < bestD {
				best, bestD = r.String(), d
			}
		}
	}
	return best
}

// editDistance is Levenshtein's distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
