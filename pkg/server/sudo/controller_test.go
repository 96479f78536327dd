package sudo

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation"
)

// names lists what the fake cluster holds of the four kinds, labelled.
func names(t *testing.T, c *fake.Clientset) []string {
	t.Helper()
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: elevation.GrantLabel}
	var out []string
	crs, err := c.RbacV1().ClusterRoles().List(ctx, sel)
	require.NoError(t, err)
	for _, o := range crs.Items {
		out = append(out, "ClusterRole "+o.Name)
	}
	crbs, _ := c.RbacV1().ClusterRoleBindings().List(ctx, sel)
	for _, o := range crbs.Items {
		out = append(out, "ClusterRoleBinding "+o.Name)
	}
	rs, _ := c.RbacV1().Roles("").List(ctx, sel)
	for _, o := range rs.Items {
		out = append(out, "Role "+o.Namespace+"/"+o.Name)
	}
	rbs, _ := c.RbacV1().RoleBindings("").List(ctx, sel)
	for _, o := range rbs.Items {
		out = append(out, "RoleBinding "+o.Namespace+"/"+o.Name)
	}
	return out
}

// Reconcile materialises a live grant from its role as the cluster holds
// it (a Role of the namespace first), removes it once revoked, and does
// nothing while the view of grants is not current; RBAC of others is left.
func TestControllerReconcile(t *testing.T) {
	ctx := context.Background()
	g, r := pair()
	g.UID = "g-1"
	now := start.Add(time.Minute)
	s := NewStore()
	s.Now = func() time.Time { return now }
	s.Load([]elevation.Grant{g}, []elevation.Request{r})
	c := fake.NewClientset(
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "edit", Namespace: "payments"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"},
				Verbs: []string{"delete"}}}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "edit"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "other", Labels: map[string]string{"x": "y"}}})
	ctl := &Controller{Store: s, Client: c}
	require.NoError(t, ctl.Reconcile(ctx))
	name := "sudo.kubectl-impersonate.io:payments:sudo-x"
	assert.ElementsMatch(t, []string{"ClusterRole " + name, "ClusterRoleBinding " + name, "Role payments/" + name,
		"RoleBinding payments/" + name}, names(t, c))
	role, err := c.RbacV1().Roles("payments").Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"impersonate-on:user-info:delete"}, role.Rules[0].Verbs, "the namespace's Role edit")
	require.NoError(t, ctl.Reconcile(ctx), "again: nothing to do")
	assert.Len(t, names(t, c), 4)

	// Not current: nothing removed, though the grant is revoked.
	revoked := g
	revoked.Status = &elevation.GrantStatus{RevokedBy: "bob"}
	s.Load([]elevation.Grant{revoked}, []elevation.Request{r})
	s.Close("connection refused")
	now = now.Add(DefaultGrace)
	assert.ErrorIs(t, ctl.Reconcile(ctx), ErrNotCurrent)
	assert.Len(t, names(t, c), 4)

	s.Load([]elevation.Grant{revoked}, []elevation.Request{r})
	require.NoError(t, ctl.Reconcile(ctx))
	assert.Empty(t, names(t, c), "revoked: all four removed")
	_, err = c.RbacV1().ClusterRoles().Get(ctx, "other", metav1.GetOptions{})
	assert.NoError(t, err, "others' RBAC stays")

	// Ended: removed as well; below, an object someone else labelled.
	s.Load([]elevation.Grant{g}, []elevation.Request{r})
	require.NoError(t, ctl.Reconcile(ctx))
	assert.Len(t, names(t, c), 4)
	now = g.Ends()
	require.NoError(t, ctl.Reconcile(ctx))
	assert.Empty(t, names(t, c), "ended: all four removed")
}

// Attacks on the controller (an attacker's review): a binding of another
// subject made under the materialised name before the grant is replaced,
// not kept; RBAC of others that carries the label is not deleted; a
// labelled object under the materialised prefix that serves no live grant
// is.
func TestControllerAttacks(t *testing.T) {
	ctx := context.Background()
	g, r := pair()
	g.UID = "g-1"
	s := NewStore()
	s.Now = func() time.Time { return start.Add(time.Minute) }
	s.Load([]elevation.Grant{g}, []elevation.Request{r})
	name := elevation.DirectName(g)
	mallory := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory"}}
	label := map[string]string{elevation.GrantLabel: "not-a-grant"}
	c := fake.NewClientset(
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "edit"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "payments"}, Subjects: mallory,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: mallory,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "prod-admins", Labels: label}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: elevation.DirectPrefix + "x:y", Labels: label}})
	ctl := &Controller{Store: s, Client: c}
	require.NoError(t, ctl.Reconcile(ctx))
	rb, err := c.RbacV1().RoleBindings("payments").Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "alice", rb.Subjects[0].Name, "mallory's binding replaced")
	crb, err := c.RbacV1().ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "alice", crb.Subjects[0].Name, "mallory's binding replaced")
	_, err = c.RbacV1().ClusterRoleBindings().Get(ctx, "prod-admins", metav1.GetOptions{})
	assert.NoError(t, err, "others' RBAC stays, labelled or not")
	_, err = c.RbacV1().ClusterRoleBindings().Get(ctx, elevation.DirectPrefix+"x:y", metav1.GetOptions{})
	assert.Error(t, err, "a materialised name serving no live grant is removed")
	assert.Len(t, names(t, c), 5, "the grant's four, and prod-admins")
}

// materialise keeps what is already as it would make it, and replaces
// what is not (a Role of other rules, an object labelled for another
// grant); a grant done is not made again; a labelled object of a live
// grant's UID under another name is removed.
func TestControllerKeepsAndReplaces(t *testing.T) {
	ctx := context.Background()
	g, r := pair()
	g.UID = "g-1"
	s := NewStore()
	s.Now = func() time.Time { return start.Add(time.Minute) }
	s.Load([]elevation.Grant{g}, []elevation.Request{r})
	rules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}
	want := elevation.Direct(g, rules)
	otherRules := want.Role.DeepCopy()
	otherRules.Rules = []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"},
		Verbs: []string{"impersonate-on:user-info:delete"}}}
	otherGrant := want.ClusterRoleBinding.DeepCopy()
	otherGrant.Labels = map[string]string{elevation.GrantLabel: "g-2"}
	stray := want.ClusterRole.DeepCopy()
	stray.Name = elevation.DirectPrefix + "payments:elsewhere"
	c := fake.NewClientset(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "edit"}, Rules: rules},
		otherRules, want.RoleBinding.DeepCopy(), otherGrant, stray)
	ctl := &Controller{Store: s, Client: c}
	require.NoError(t, ctl.Reconcile(ctx))
	role, err := c.RbacV1().Roles("payments").Get(ctx, want.Role.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, want.Role.Rules, role.Rules, "a Role of other rules replaced")
	crb, err := c.RbacV1().ClusterRoleBindings().Get(ctx, want.Role.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "g-1", crb.Labels[elevation.GrantLabel], "one labelled for another grant replaced")
	_, err = c.RbacV1().ClusterRoles().Get(ctx, stray.Name, metav1.GetOptions{})
	assert.Error(t, err, "the grant's UID under another name: removed")
	var deleted []string
	for _, a := range c.Actions() {
		if a.GetVerb() == "delete" {
			deleted = append(deleted, a.GetResource().Resource)
		}
	}
	assert.ElementsMatch(t, []string{"roles", "clusterrolebindings", "clusterroles"}, deleted,
		"kept: the RoleBinding as it would make it; removed: the binding labelled for another grant (then made) "+
			"and the stray; replaced: the Role of other rules")

	c.ClearActions()
	require.NoError(t, ctl.Reconcile(ctx))
	for _, a := range c.Actions() {
		assert.Equal(t, "list", a.GetVerb(), "done: nothing made again (%s %s)", a.GetVerb(), a.GetResource().Resource)
	}
}
