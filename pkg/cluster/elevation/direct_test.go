package elevation

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Direct: the requester may take, by impersonate:user-info, their own
// name, the grant's group and its extras alone, cluster-wide (where
// identities are asked); and the role's verbs as impersonate-on in the
// grant's namespace; all four labelled with the grant's UID.
func TestDirect(t *testing.T) {
	g := Grant{ObjectMeta: metav1.ObjectMeta{Name: "sudo-x", Namespace: "payments", UID: "g-1",
		CreationTimestamp: metav1.NewTime(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))},
		Spec: GrantSpec{Request: "sudo-x", Requester: "alice", Role: "edit", DurationSeconds: 1800, Reason: "INC-1",
			Ticket: "T-1", Approver: "bob"}}
	o := Direct(g, []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"web"}, Verbs: []string{"*"}},
		{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}},
	})
	name := "sudo.kubectl-impersonate.io:payments:sudo-x"
	for _, m := range []metav1.ObjectMeta{o.ClusterRole.ObjectMeta, o.ClusterRoleBinding.ObjectMeta, o.Role.ObjectMeta,
		o.RoleBinding.ObjectMeta} {
		assert.Equal(t, name, m.Name)
		assert.Equal(t, map[string]string{GrantLabel: "g-1"}, m.Labels)
	}
	assert.Empty(t, o.ClusterRole.Namespace)
	assert.Equal(t, "payments", o.Role.Namespace)
	assert.Equal(t, "payments", o.RoleBinding.Namespace)
	alice := []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "alice"}}
	assert.Equal(t, alice, o.ClusterRoleBinding.Subjects)
	assert.Equal(t, alice, o.RoleBinding.Subjects)
	assert.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}, o.RoleBinding.RoleRef)
	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"users"}, ResourceNames: []string{"alice"},
			Verbs: []string{"impersonate:user-info"}},
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"groups"},
			ResourceNames: []string{"sudo:payments:edit"}, Verbs: []string{"impersonate:user-info"}},
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"userextras/kubectl-impersonate.io/sudo-grant"},
			ResourceNames: []string{"payments/sudo-x"}, Verbs: []string{"impersonate:user-info"}},
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"userextras/kubectl-impersonate.io/sudo-reason"},
			ResourceNames: []string{"INC-1"}, Verbs: []string{"impersonate:user-info"}},
		{NonResourceURLs: []string{"/api", "/api/*", "/apis", "/apis/*", "/version", "/openapi/*"},
			Verbs: []string{"impersonate-on:user-info:get"}},
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"userextras/kubectl-impersonate.io/sudo-ticket"},
			ResourceNames: []string{"T-1"}, Verbs: []string{"impersonate:user-info"}},
	}, o.ClusterRole.Rules, "the grant's own reason and ticket, nothing else")
	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"},
			Verbs: []string{"impersonate-on:user-info:get", "impersonate-on:user-info:delete"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"web"},
			Verbs: []string{"impersonate-on:user-info:get", "impersonate-on:user-info:list",
				"impersonate-on:user-info:watch", "impersonate-on:user-info:create", "impersonate-on:user-info:update",
				"impersonate-on:user-info:patch", "impersonate-on:user-info:delete",
				"impersonate-on:user-info:deletecollection"}},
	}, o.Role.Rules, "non-resource rules dropped, * as the standard verbs")

	user, groups, extra := DirectKubeconfigAs(g)
	assert.Equal(t, "alice", user)
	assert.Equal(t, []string{"sudo:payments:edit"}, groups)
	assert.Equal(t, map[string][]string{GrantExtra: {"payments/sudo-x"}, ReasonExtra: {"INC-1"},
		TicketExtra: {"T-1"}}, extra)
}
