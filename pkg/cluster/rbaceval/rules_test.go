package rbaceval

import (
	"testing"

	"github.com/stretchr/testify/assert"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestWhoCanAndForIdentity(t *testing.T) {
	r := &RBAC{
		Roles: map[string][]rbacv1.PolicyRule{
			"team-a/pod-reader": {{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}},
			"team-a/cm-named":   {{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}, ResourceNames: []string{"a", "b"}}},
		},
		ClusterRoles: map[string][]rbacv1.PolicyRule{
			"admin":     {{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
			"log-reads": {{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}}},
		},
		RoleBindings: []rbacv1.RoleBinding{
			{ObjectMeta: metav1.ObjectMeta{Name: "devs", Namespace: "team-a"}, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "pod-reader"},
				Subjects: []rbacv1.Subject{{Kind: "Group", Name: "developers"}, {Kind: "User", Name: "carol"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "named", Namespace: "team-a"}, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "cm-named"},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "team-a", Name: "app"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "team-b"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "admin"},
				Subjects: []rbacv1.Subject{{Kind: "User", Name: "dave"}}},
		},
		ClusterRoleBindings: []rbacv1.ClusterRoleBinding{
			{ObjectMeta: metav1.ObjectMeta{Name: "logs"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "log-reads"},
				Subjects: []rbacv1.Subject{{Kind: "Group", Name: "system:authenticated"}}},
		},
	}
	names := func(gs []Grant) []string {
		var out []string
		for _, g := range gs {
			out = append(out, g.Namespace+"/"+g.Binding)
		}
		return out
	}
	tests := []struct {
		name   string
		target Target
		want   []string
	}{
		{"list pods in team-a", ParseTarget("list", "pods", "", "team-a"), []string{"team-a/devs"}},
		{"everywhere", ParseTarget("delete", "pods", "", ""), []string{"team-b/other"}},
		{"resourceNames: the named object", ParseTarget("get", "configmaps", "a", "team-a"), []string{"team-a/named"}},
		{"resourceNames: not another", ParseTarget("get", "configmaps", "c", "team-a"), nil},
		{"subresource via a cluster binding", ParseTarget("get", "pods/log", "", "team-a"), []string{"/logs"}},
		{"group of the resource", ParseTarget("get", "deployments.apps", "", "team-a"), nil},
		// dave's admin RoleBinding in team-b does not let him impersonate:
		// kube-apiserver asks impersonation at cluster scope.
		{"impersonate users: cluster bindings only", ParseTarget("impersonate", "users", "", "team-b"), nil},
		{"impersonate serviceaccounts: the namespace's", ParseTarget("impersonate", "serviceaccounts", "", "team-b"), []string{"team-b/other"}},
		// Binding a ClusterRole in a RoleBinding is asked in its namespace.
		{"bind clusterroles: the namespace's too", ParseTarget("bind", "clusterroles.rbac.authorization.k8s.io", "", "team-b"), []string{"team-b/other"}},
		{"escalate clusterroles: cluster bindings only", ParseTarget("escalate", "clusterroles.rbac.authorization.k8s.io", "", "team-b"), nil},
		{"bind roles: the namespace's", ParseTarget("bind", "roles.rbac.authorization.k8s.io", "", "team-b"), []string{"team-b/other"}},
		{"constrained: impersonate-on is the request's", ParseTarget("impersonate-on:user-info:get", "pods", "", "team-b"), []string{"team-b/other"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, names(r.WhoCan(tt.target)))
		})
	}
	mine := ForIdentity(r.WhoCan(ParseTarget("get", "pods", "", "team-a")), "alice", []string{"developers", "system:authenticated"})
	assert.Equal(t, []string{"team-a/devs"}, names(mine))
	assert.Equal(t, []rbacv1.Subject{{Kind: "Group", Name: "developers"}}, mine[0].Subjects, "only the subjects that are the identity")
	sa := ForIdentity(r.WhoCan(ParseTarget("get", "configmaps", "b", "team-a")), "system:serviceaccount:team-a:app", nil)
	assert.Equal(t, []string{"team-a/named"}, names(sa))
}

func TestParseTarget(t *testing.T) {
	assert.Equal(t, Target{Verb: "update", Group: "apps", Resource: "deployments", Subresource: "scale", Name: "web", Namespace: "ns"},
		ParseTarget("update", "deployments.apps/scale", "web", "ns"))
}

// Non-resource URLs as Kubernetes' RBAC reads them: "*", exact paths, a
// trailing "*" as a prefix; granted only through ClusterRoleBindings.
func TestNonResourceURLs(t *testing.T) {
	for _, tt := range []struct {
		urls []string
		path string
		want bool
	}{
		{[]string{"/metrics"}, "/metrics", true},
		{[]string{"/metrics"}, "/metrics/cadvisor", false},
		{[]string{"/metrics*"}, "/metrics/cadvisor", true},
		{[]string{"/metrics*"}, "/metricsx", true},
		{[]string{"/logs/*"}, "/logs", false},
		{[]string{"*"}, "/healthz", true},
		{[]string{"/healthz"}, "/readyz", false},
	} {
		assert.Equal(t, tt.want, PolicyRuleAllows(rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: tt.urls}, ParseTarget("get", tt.path, "", "")), "%v %s", tt.urls, tt.path)
	}
	rule := []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}}}
	r := &RBAC{Roles: map[string][]rbacv1.PolicyRule{"ns/r": rule}, ClusterRoles: map[string][]rbacv1.PolicyRule{"m": rule},
		RoleBindings: []rbacv1.RoleBinding{
			{ObjectMeta: metav1.ObjectMeta{Name: "rb", Namespace: "ns"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "m"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "via-rolebinding"}}}},
		ClusterRoleBindings: []rbacv1.ClusterRoleBinding{
			{ObjectMeta: metav1.ObjectMeta{Name: "crb"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "m"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "via-clusterrolebinding"}}}},
	}
	grants := r.WhoCan(ParseTarget("get", "/metrics", "", "ns"))
	if assert.Len(t, grants, 1) {
		assert.Equal(t, "crb", grants[0].Binding, "a RoleBinding never grants a non-resource URL")
	}
	assert.Empty(t, r.WhoCan(ParseTarget("post", "/metrics", "", "")))
}
