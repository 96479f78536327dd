package rbaceval

import (
	"testing"

	"github.com/stretchr/testify/assert"
	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRulesFor: the rules kube-apiserver's RBAC resolver gives an identity
// in a namespace (VisitRulesFor, appliesToUser); the end-to-end
// differential compares the same with the server's rules reviews.
func TestRulesFor(t *testing.T) {
	rule := func(res string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{res}}
	}
	want := func(res ...string) []authzv1.ResourceRule {
		var out []authzv1.ResourceRule
		for _, r := range res {
			out = append(out, authzv1.ResourceRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{r}})
		}
		return out
	}
	rb := func(ns, name, kind, role string, subjects ...rbacv1.Subject) rbacv1.RoleBinding {
		return rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, RoleRef: rbacv1.RoleRef{Kind: kind, Name: role}, Subjects: subjects}
	}
	user := func(n string) rbacv1.Subject { return rbacv1.Subject{Kind: rbacv1.UserKind, Name: n} }
	group := func(n string) rbacv1.Subject { return rbacv1.Subject{Kind: rbacv1.GroupKind, Name: n} }
	sa := func(ns, n string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: n}
	}
	snap := &RBAC{
		Roles: map[string][]rbacv1.PolicyRule{"a/cm": {rule("configmaps")}, "b/cm": {rule("configmaps")}},
		ClusterRoles: map[string][]rbacv1.PolicyRule{
			"nodes":   {rule("nodes"), {Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}}},
			"secrets": {rule("secrets")},
		},
		ClusterRoleBindings: []rbacv1.ClusterRoleBinding{
			{ObjectMeta: metav1.ObjectMeta{Name: "n"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "nodes"}, Subjects: []rbacv1.Subject{group("ops")}},
			{ObjectMeta: metav1.ObjectMeta{Name: "gone"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "deleted"}, Subjects: []rbacv1.Subject{user("carol")}},
		},
		RoleBindings: []rbacv1.RoleBinding{
			rb("a", "cm", "Role", "cm", user("alice")),
			rb("a", "s", "ClusterRole", "secrets", group("ops")),
			rb("b", "cm", "Role", "cm", sa("", "builder")),
			rb("b", "other", "Role", "cm", sa("a", "builder")),
			rb("b", "missing", "Role", "nope", user("dave")),
		},
	}
	for _, tt := range []struct {
		name      string
		user      string
		groups    []string
		namespace string
		want      []authzv1.ResourceRule
	}{
		{name: "user: the namespace's Role", user: "alice", namespace: "a", want: want("configmaps")},
		{name: "user elsewhere: nothing", user: "alice", namespace: "b"},
		{name: "group: the ClusterRoleBinding, then a RoleBinding to a ClusterRole (non-resource rules left out)", user: "x", groups: []string{"ops"}, namespace: "a", want: want("nodes", "secrets")},
		{name: "cluster scope: the ClusterRoleBindings only", user: "x", groups: []string{"ops"}, namespace: ClusterScopeNamespace, want: want("nodes")},
		{name: "service account: the subject's namespace defaults to the binding's", user: "system:serviceaccount:b:builder", namespace: "b", want: want("configmaps")},
		{name: "service account of another namespace, named", user: "system:serviceaccount:a:builder", namespace: "b", want: want("configmaps")},
		{name: "a binding to a missing role grants nothing (the server's review stays complete)", user: "dave", namespace: "b"},
		{name: "a ClusterRoleBinding to a missing role", user: "carol", namespace: "a"},
		{name: "system:masters: everything, whatever is bound (the superuser authorizer comes first)", user: "root", groups: []string{"system:masters", "ops"}, namespace: "a",
			want: []authzv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, incomplete := snap.RulesFor(tt.user, tt.groups, tt.namespace)
			assert.Equal(t, tt.want, got)
			assert.False(t, incomplete, "RBAC's review is complete")
		})
	}
}

func TestSameRules(t *testing.T) {
	a := []authzv1.ResourceRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}, {Verbs: []string{"get"}, APIGroups: []string{"apps"}, Resources: []string{"deployments"}}}
	b := []authzv1.ResourceRule{{Verbs: []string{"get"}, APIGroups: []string{"apps"}, Resources: []string{"deployments"}}, {Verbs: []string{"list", "get"}, APIGroups: []string{""}, Resources: []string{"pods"}}, a[1]}
	assert.True(t, SameRules(a, b), "order and repetition aside")
	assert.False(t, SameRules(a, a[:1]))
	assert.False(t, SameRules(a, []authzv1.ResourceRule{a[0], {Verbs: []string{"get"}, APIGroups: []string{"apps"}, Resources: []string{"deployments"}, ResourceNames: []string{"x"}}}))
	assert.True(t, SameRules(nil, []authzv1.ResourceRule{}))
}
