// Package rolegen generates the least privilege that serves a use read by
// pkg/cluster/auditlog.
//
//   - Generate makes a Role for each namespace used, a ClusterRole for the
//     rest, and their bindings, from the requests the cluster allowed alone.
//   - A name the use did not name is never granted, and a rule that names
//     every object is said (Widened), as are the escalation paths granted.
//   - Refused, undecided and wildcard requests are listed, never granted.
package rolegen

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/auditlog"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbac"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/risk"
)

// DefaultMaxNames is PolicyOptions.MaxNames' default: no bound, a rule
// names every object it was used on (a name not seen allowed is never
// granted).
const DefaultMaxNames = 0

// PolicyOptions shapes the generated policy.
type PolicyOptions struct {
	// Name names the Roles, the ClusterRole and their bindings.
	Name string
	// Subject is who the bindings bind (none without one).
	Subject *rbacv1.Subject
	// MaxNames: a rule lists resourceNames when the use named at most this
	// many objects and never listed them all; more, and it names none
	// (Widened). 0: no bound.
	MaxNames int
}

// Policy is the least privilege that serves a use: a Role for each
// namespace used, a ClusterRole for the use at cluster scope (cluster-scoped
// resources, every namespace at once, non-resource URLs), and their
// bindings.
type Policy struct {
	Roles              []rbacv1.Role              `json:"roles,omitempty"`
	ClusterRole        *rbacv1.ClusterRole        `json:"clusterRole,omitempty"`
	RoleBindings       []rbacv1.RoleBinding       `json:"roleBindings,omitempty"`
	ClusterRoleBinding *rbacv1.ClusterRoleBinding `json:"clusterRoleBinding,omitempty"`
	// Used are the cells used (namespace, verb, resource), the refused
	// and discovery's aside.
	Used []Cell `json:"used"`
	// Refused are the requests the cluster refused: not granted.
	Refused []auditlog.Request `json:"refused,omitempty"`
	// Undecided are the requests nothing shows the authorizer allowed (no
	// answer, an answer given before it decided): not granted.
	Undecided []auditlog.Request `json:"undecided,omitempty"`
	// Wildcards are the requests that name "*" (a verb, group, resource or
	// path of it): the cluster answered what no such object is (404), and
	// a rule of them would grant everything: not granted.
	Wildcards []auditlog.Request `json:"wildcards,omitempty"`
	// Widened are the cells whose rule grants every object though the use
	// named some (more than MaxNames): wider than the cluster was seen to
	// allow, on the user's word (--max-names).
	Widened []Cell `json:"widened,omitempty"`
	// Discovery counts the discovery requests (every authenticated user's,
	// system:discovery): not granted.
	Discovery int `json:"discovery"`
	// Escalations are the generated rules that are escalation paths.
	Escalations []Escalation `json:"escalations,omitempty"`
}

// Cell is one verb on one resource (or non-resource URL) in one namespace
// ("" for cluster scope): a cell of the access matrix.
type Cell struct {
	Namespace string `json:"namespace,omitempty"`
	Verb      string `json:"verb"`
	APIGroup  string `json:"apiGroup,omitempty"`
	// Resource is "resource" or "resource/subresource".
	Resource string `json:"resource,omitempty"`
	Path     string `json:"path,omitempty"`
}

// Escalation is a generated rule that lets its holder gain more than it
// names (risk.Of).
type Escalation struct {
	Namespace string `json:"namespace,omitempty"`
	Verb      string `json:"verb"`
	APIGroup  string `json:"apiGroup,omitempty"`
	Resource  string `json:"resource"`
	risk.Risk
}

// discoveryPath tells the non-resource URLs every user may get (the
// system:discovery and system:public-info-viewer roles kube-apiserver
// binds to system:authenticated): discovery, its OpenAPI, version, health.
func discoveryPath(verb, path string) bool {
	if verb != "get" {
		return false
	}
	switch path {
	case "/api", "/apis", "/version", "/healthz", "/livez", "/readyz", "/openapi/v2", "/openapi/v3":
		return true
	}
	for _, p := range []string{"/api/", "/apis/", "/openapi/v3/", "/healthz/", "/livez/", "/readyz/"} {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// ruleKey is one verb on one resource of one group in one scope.
type ruleKey struct {
	namespace, group, resource, path, verb string
}

// names is the objects a verb was used on, and whether it was used without
// a name (a list, a create, a collection).
type names struct {
	unnamed bool
	names   map[string]bool
}

// DefaultName names the generated objects when PolicyOptions does not.
const DefaultName = "least-privilege"

// RoleBinding binds role to subject, named as the role.
func RoleBinding(role rbacv1.Role, subject rbacv1.Subject) rbacv1.RoleBinding {
	return rbacv1.RoleBinding{TypeMeta: typeMeta("RoleBinding"), ObjectMeta: role.ObjectMeta,
		Subjects: []rbacv1.Subject{subject}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role",
			Name: role.Name}}
}

// Generate is the least privilege that serves reqs.
func Generate(reqs []auditlog.Request, o PolicyOptions) Policy {
	o.MaxNames = cmp.Or(o.MaxNames, DefaultMaxNames)
	o.Name = cmp.Or(o.Name, DefaultName)
	var p Policy
	used := p.sort(reqs)
	byScope := map[string][]rbacv1.PolicyRule{}
	for _, k := range slices.SortedFunc(maps.Keys(used), compareKeys) {
		p.Used = append(p.Used, Cell{Namespace: k.namespace, Verb: k.verb, APIGroup: k.group, Resource: k.resource,
			Path: k.path})
		if widened(used[k], o.MaxNames) && k.path == "" {
			p.Widened = append(p.Widened, p.Used[len(p.Used)-1])
		}
		if rk := risk.Of(k.verb, k.group, k.resource); rk.Risky() && k.path == "" {
			p.Escalations = append(p.Escalations, Escalation{Namespace: k.namespace, Verb: k.verb, APIGroup: k.group,
				Resource: k.resource, Risk: rk})
		}
	}
	for scope, keys := range groupBy(slices.Collect(maps.Keys(used)), func(k ruleKey) string { return k.namespace }) {
		byScope[scope] = rules(keys, used, o.MaxNames)
	}
	for _, ns := range slices.Sorted(maps.Keys(byScope)) {
		if ns == "" {
			continue
		}
		role := rbacv1.Role{TypeMeta: typeMeta("Role"), ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: ns},
			Rules: byScope[ns]}
		p.Roles = append(p.Roles, role)
		if o.Subject != nil {
			p.RoleBindings = append(p.RoleBindings, RoleBinding(role, *o.Subject))
		}
	}
	if cluster, ok := byScope[""]; ok {
		meta := metav1.ObjectMeta{Name: o.Name}
		p.ClusterRole = &rbacv1.ClusterRole{TypeMeta: typeMeta("ClusterRole"), ObjectMeta: meta, Rules: cluster}
		if o.Subject != nil {
			p.ClusterRoleBinding = &rbacv1.ClusterRoleBinding{TypeMeta: typeMeta("ClusterRoleBinding"),
				ObjectMeta: meta, Subjects: []rbacv1.Subject{*o.Subject},
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: o.Name}}
		}
	}
	return p
}

// sort puts each request where it goes: refused, undecided, a wildcard,
// discovery, or used (what the rules grant, by cell, with the names used).
func (p *Policy) sort(reqs []auditlog.Request) map[ruleKey]*names {
	used := map[ruleKey]*names{}
	add := func(k ruleKey, name string) {
		n := used[k]
		if n == nil {
			n = &names{names: map[string]bool{}}
			used[k] = n
		}
		if name == "" {
			n.unnamed = true
		} else {
			n.names[name] = true
		}
	}
	for _, r := range reqs {
		switch {
		case r.Decision == auditlog.Forbid:
			p.Refused = append(p.Refused, r)
			continue
		case r.Decision != auditlog.Allow:
			p.Undecided = append(p.Undecided, r)
			continue
		case wildcard(r):
			p.Wildcards = append(p.Wildcards, r)
			continue
		case r.Resource == "" && discoveryPath(r.Verb, r.Path):
			p.Discovery++
			continue
		case r.Resource == "":
			add(ruleKey{path: r.Path, verb: r.Verb}, "")
			continue
		}
		k := ruleKey{namespace: r.Namespace, group: r.APIGroup, resource: r.ResourceWithSub(), verb: r.Verb}
		if risk.ClusterScoped(r.Verb, r.APIGroup, r.Resource) {
			k.namespace = "" // asked at cluster scope whatever the namespace
		}
		add(k, r.Name)
		if other := streamedCreate(r); other != "" {
			k.verb = other
			add(k, r.Name)
		}
	}
	return used
}

// widened tells whether n's names are too many to list (MaxNames, 0 no
// bound), and it was never used without one.
func widened(n *names, maxNames int) bool {
	return !n.unnamed && maxNames > 0 && len(n.names) > maxNames
}

// streamedCreate is "create" for a WebSocket's exec, attach or
// port-forward that was upgraded (101): kube-apiserver (1.35+) asked create
// as well as get before it switched protocols. Nothing for anything else:
// a get that was not upgraded was asked get alone, an SPDY upgrade create
// alone.
func streamedCreate(r auditlog.Request) string {
	if r.Code != http.StatusSwitchingProtocols || r.Verb != "get" {
		return ""
	}
	return risk.StreamingPair(r.Verb, r.APIGroup, r.ResourceWithSub())
}

// wildcard tells whether r names "*" anywhere a rule would read it as
// every verb, group, resource or path, or as a name the impersonation
// filter asks for every group, extra or node.
func wildcard(r auditlog.Request) bool {
	return r.Name == "*" || slices.ContainsFunc([]string{r.Verb, r.APIGroup, r.Resource, r.Subresource, r.Path},
		func(s string) bool { return strings.Contains(s, "*") })
}

func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: kind}
}

func compareKeys(a, b ruleKey) int {
	return cmp.Or(cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.path, b.path), cmp.Compare(a.group, b.group),
		cmp.Compare(a.resource, b.resource), cmp.Compare(verbOrder(a.verb), verbOrder(b.verb)),
		cmp.Compare(a.verb, b.verb))
}

// verbOrder sorts verbs as kubectl and the access matrix print them.
func verbOrder(v string) int {
	if i := slices.Index(rbac.DefaultVerbs, v); i >= 0 {
		return i
	}
	return len(rbac.DefaultVerbs)
}

func groupBy[K comparable](keys []ruleKey, by func(ruleKey) K) map[K][]ruleKey {
	out := map[K][]ruleKey{}
	for _, k := range keys {
		out[by(k)] = append(out[by(k)], k)
	}
	return out
}

// rules are one scope's rules: each verb on each resource with the
// objects it was used on (when few, and none was used without a name),
// then the verbs of one resource and names together, then the resources
// of one group with the same verbs and names together.
func rules(keys []ruleKey, used map[ruleKey]*names, maxNames int) []rbacv1.PolicyRule {
	type target struct{ group, resource, path, names string }
	verbs := map[target][]string{}
	for _, k := range keys {
		n := used[k]
		t := target{group: k.group, resource: k.resource, path: k.path}
		if !n.unnamed && !widened(n, maxNames) && k.path == "" {
			t.names = strings.Join(slices.Sorted(maps.Keys(n.names)), "\x00")
		}
		verbs[t] = append(verbs[t], k.verb)
	}
	type merged struct{ group, names, verbs string }
	resources := map[merged][]string{}
	var paths []rbacv1.PolicyRule
	for t, vs := range verbs {
		slices.SortFunc(vs, func(a, b string) int { return cmp.Or(verbOrder(a)-verbOrder(b), cmp.Compare(a, b)) })
		if t.path != "" {
			paths = append(paths, rbacv1.PolicyRule{NonResourceURLs: []string{t.path}, Verbs: vs})
			continue
		}
		m := merged{group: t.group, names: t.names, verbs: strings.Join(vs, " ")}
		resources[m] = append(resources[m], t.resource)
	}
	var out []rbacv1.PolicyRule
	for m, rs := range resources {
		slices.Sort(rs)
		r := rbacv1.PolicyRule{APIGroups: []string{m.group}, Resources: rs, Verbs: strings.Split(m.verbs, " ")}
		if m.names != "" {
			r.ResourceNames = strings.Split(m.names, "\x00")
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b rbacv1.PolicyRule) int {
		return cmp.Or(cmp.Compare(a.APIGroups[0], b.APIGroups[0]), slices.Compare(a.Resources, b.Resources),
			slices.Compare(a.ResourceNames, b.ResourceNames), slices.Compare(a.Verbs, b.Verbs))
	})
	slices.SortFunc(paths, func(a, b rbacv1.PolicyRule) int {
		return cmp.Or(cmp.Compare(a.NonResourceURLs[0], b.NonResourceURLs[0]), slices.Compare(a.Verbs, b.Verbs))
	})
	return append(out, paths...)
}

// String is the cell as "verb resource.group in namespace".
func (c Cell) String() string {
	what := c.Path
	if c.Resource != "" {
		what = c.Resource
		if c.APIGroup != "" {
			what += "." + c.APIGroup
		}
	}
	if c.Namespace == "" {
		return fmt.Sprintf("%s %s", c.Verb, what)
	}
	return fmt.Sprintf("%s %s in %s", c.Verb, what, c.Namespace)
}
