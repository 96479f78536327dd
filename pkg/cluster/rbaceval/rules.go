// Package rbaceval evaluates RBAC as kube-apiserver's RBAC authorizer does,
// over the objects read once (k8s.io/kubernetes
// pkg/apis/rbac/v1/evaluation_helpers.go and plugin/pkg/auth/authorizer/rbac).
//
//   - Target is what a question is about; PolicyRuleAllows, RuleAllows and
//     ObjectAllowed say whether a rule grants it.
//   - RBAC holds the roles and bindings; BindingsFor is the one walk of the
//     bindings that apply to an identity in a Scope, under RulesFor, Local
//     (access -A's local rules) and the graph; WhoCan the other way round.
//   - ServiceAccountUser and SplitServiceAccount are the service account's
//     username, built and read in one place.
//
// Asking the cluster (access matrices, lists, why, who-can --verify) is
// pkg/cluster/rbac's.
package rbaceval

import (
	"slices"
	"sort"
	"strings"

	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/risk"
)

// Target is what a question is about: a verb on a resource (resource.group,
// optionally resource/subresource), maybe one name, in a namespace; or a
// verb on a non-resource URL such as /metrics.
type Target struct {
	Verb        string
	Group       string
	Resource    string
	Subresource string
	Name        string
	Namespace   string
	// NonResourceURL is a path (it starts with "/"); the other fields but
	// Verb are then empty.
	NonResourceURL string
}

// ParseTarget reads "VERB RESOURCE[.GROUP][/SUBRESOURCE] [NAME]", or
// "VERB /PATH" for a non-resource URL.
func ParseTarget(verb, resource, name, namespace string) Target {
	if strings.HasPrefix(resource, "/") {
		return Target{Verb: verb, NonResourceURL: resource}
	}
	t := Target{Verb: verb, Name: name, Namespace: namespace}
	res, sub, _ := strings.Cut(resource, "/")
	t.Resource, t.Group, _ = strings.Cut(res, ".")
	t.Subresource = sub
	return t
}

// ClusterScoped tells whether kube-apiserver asks t at cluster scope
// whatever its namespace (risk.ClusterScoped).
func (t Target) ClusterScoped() bool {
	return t.NonResourceURL == "" && risk.ClusterScoped(t.Verb, t.Group, t.Resource)
}

// ResourceWithSub is "resource/subresource", or the resource alone.
func (t Target) ResourceWithSub() string {
	if t.Subresource != "" {
		return t.Resource + "/" + t.Subresource
	}
	return t.Resource
}

// PolicyRuleAllows tells whether rule grants t.
func PolicyRuleAllows(rule rbacv1.PolicyRule, t Target) bool {
	if t.NonResourceURL != "" {
		return Matches(rule.Verbs, t.Verb) && nonResourceURLMatches(rule.NonResourceURLs, t.NonResourceURL)
	}
	if !Matches(rule.Verbs, t.Verb) || !Matches(rule.APIGroups, t.Group) {
		return false
	}
	a, _ := RuleAllows(authzv1.ResourceRule{Verbs: rule.Verbs, APIGroups: rule.APIGroups, Resources: rule.Resources},
		t.Group, t.ResourceWithSub(), t.Verb)
	if !a {
		return false
	}
	return len(rule.ResourceNames) == 0 || (t.Name != "" && slices.Contains(rule.ResourceNames, t.Name))
}

// nonResourceURLMatches is Kubernetes' rule for non-resource URLs: "*"
// matches every path, a path matches itself, and a path ending in "*"
// matches every path with that prefix.
func nonResourceURLMatches(urls []string, path string) bool {
	return slices.ContainsFunc(urls, func(u string) bool {
		return u == "*" || u == path ||
			(strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimSuffix(u, "*")))
	})
}

// Grant is a binding that grants the target.
type Grant struct {
	Binding     string           `json:"binding"`
	BindingKind string           `json:"bindingKind"`
	Namespace   string           `json:"namespace,omitempty"`
	Role        string           `json:"role"`
	RoleKind    string           `json:"roleKind"`
	Subjects    []rbacv1.Subject `json:"subjects"`
	// Denied (who-can --verify) names the subjects the authorizer chain
	// denies although this binding grants them, with its reason.
	Denied map[string]string `json:"deniedBySubject,omitempty"`
}

// RBAC is a snapshot of the RBAC objects the caller can read.
type RBAC struct {
	Roles               map[string][]rbacv1.PolicyRule // namespace/name
	ClusterRoles        map[string][]rbacv1.PolicyRule
	RoleBindings        []rbacv1.RoleBinding
	ClusterRoleBindings []rbacv1.ClusterRoleBinding
}

func (r *RBAC) rulesOf(ref rbacv1.RoleRef, namespace string) []rbacv1.PolicyRule {
	if ref.Kind == "ClusterRole" {
		return r.ClusterRoles[ref.Name]
	}
	return r.Roles[namespace+"/"+ref.Name]
}

func anyAllows(rules []rbacv1.PolicyRule, t Target) bool {
	return slices.ContainsFunc(rules, func(p rbacv1.PolicyRule) bool { return PolicyRuleAllows(p, t) })
}

// WhoCan lists the bindings that grant t: RoleBindings in t.Namespace (all
// namespaces when it is empty) and ClusterRoleBindings.
func (r *RBAC) WhoCan(t Target) []Grant {
	var out []Grant
	// Non-resource URLs have no namespace: only ClusterRoleBindings grant
	// them, as in kube-apiserver's RBAC authorizer.
	for _, b := range r.RoleBindings {
		if t.NonResourceURL != "" || t.ClusterScoped() {
			break
		}
		if t.Namespace != "" && b.Namespace != t.Namespace {
			continue
		}
		if anyAllows(r.rulesOf(b.RoleRef, b.Namespace), t) {
			out = append(out,
				Grant{Binding: b.Name, BindingKind: "RoleBinding", Namespace: b.Namespace, Role: b.RoleRef.Name,
					RoleKind: b.RoleRef.Kind, Subjects: b.Subjects})
		}
	}
	for _, b := range r.ClusterRoleBindings {
		if anyAllows(r.ClusterRoles[b.RoleRef.Name], t) {
			out = append(out,
				Grant{Binding: b.Name, BindingKind: "ClusterRoleBinding", Role: b.RoleRef.Name, RoleKind: "ClusterRole",
					Subjects: b.Subjects})
		}
	}
	sort.SliceStable(out,
		func(i, j int) bool { return out[i].Namespace+out[i].Binding < out[j].Namespace+out[j].Binding })
	return out
}

// ForIdentity keeps the grants one of whose subjects is the user, one of
// its groups (system:authenticated included), or, for service accounts,
// the account.
func ForIdentity(grants []Grant, username string, groups []string) []Grant {
	var out []Grant
	for _, g := range grants {
		var mine []rbacv1.Subject
		for _, s := range g.Subjects {
			switch s.Kind {
			case rbacv1.UserKind:
				if s.Name == username {
					mine = append(mine, s)
				}
			case rbacv1.GroupKind:
				if slices.Contains(groups, s.Name) {
					mine = append(mine, s)
				}
			case rbacv1.ServiceAccountKind:
				if username == ServiceAccountUser(s.Namespace, s.Name) {
					mine = append(mine, s)
				}
			}
		}
		if len(mine) > 0 {
			g.Subjects = mine
			out = append(out, g)
		}
	}
	return out
}

// ResourceDisplay is resource[.group][/subresource] [name], or the path.
func (t Target) ResourceDisplay() string {
	if t.NonResourceURL != "" {
		return t.NonResourceURL
	}
	s := t.Resource
	if t.Group != "" {
		s += "." + t.Group
	}
	if t.Subresource != "" {
		s += "/" + t.Subresource
	}
	if t.Name != "" {
		s += " " + t.Name
	}
	return s
}

// Where is "in namespace X", "in every namespace" or "".
func (t Target) Where() string {
	if t.NonResourceURL != "" {
		return "(a non-resource URL)"
	}
	if t.ClusterScoped() {
		return "at cluster scope"
	}
	if t.Namespace == "" {
		return "in any namespace"
	}
	return "in namespace " + t.Namespace
}

// serviceAccountPrefix begins a service account's username.
const serviceAccountPrefix = "system:serviceaccount:"

// ServiceAccountUser is the username of service account NAME in NS.
func ServiceAccountUser(ns, name string) string { return serviceAccountPrefix + ns + ":" + name }

// SplitServiceAccount reads system:serviceaccount:NS:NAME, as
// kube-apiserver's serviceaccount.SplitUsername reads it.
func SplitServiceAccount(user string) (ns, name string, ok bool) {
	rest, ok := strings.CutPrefix(user, serviceAccountPrefix)
	if !ok {
		return "", "", false
	}
	ns, name, ok = strings.Cut(rest, ":")
	return ns, name, ok && ns != "" && name != "" && !strings.Contains(name, ":")
}

// RuleAllows tells whether one rule grants verb on resource (with
// subresource "pods/log" style names), and whether only for some names.
func RuleAllows(rule authzv1.ResourceRule, group, resource, verb string) (allowed, partial bool) {
	if !Matches(rule.Verbs, verb) || !Matches(rule.APIGroups, group) {
		return false, false
	}
	// Kubernetes' RBAC (pkg/apis/rbac/v1 ResourceMatches): "*" matches
	// every resource and subresource, "resource" or "resource/sub" only
	// itself, and "*/sub" that subresource of every resource. There is no
	// "resource/*" form: such a rule matches nothing but itself.
	_, sub, _ := strings.Cut(resource, "/")
	ok := slices.ContainsFunc(rule.Resources, func(r string) bool {
		return r == "*" || r == resource || (sub != "" && r == "*/"+sub)
	})
	if !ok {
		return false, false
	}
	if len(rule.ResourceNames) > 0 {
		return false, true
	}
	return true, false
}

// Matches tells whether an RBAC list (verbs, API groups, resources) holds v
// or the wildcard.
func Matches(list []string, v string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, v)
}

// ObjectAllowed tells whether a rule grants verb on the object name of
// resource: a rule without resourceNames grants every object, one with
// resourceNames only those it names.
func ObjectAllowed(rule authzv1.ResourceRule, group, resource, name, verb string) bool {
	allowed, partial := RuleAllows(rule, group, resource, verb)
	return allowed || (partial && slices.Contains(rule.ResourceNames, name))
}
