package rbac

import (
	"context"
	"fmt"
	"maps"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authzv1 "k8s.io/api/authorization/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbaceval"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/resource"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/risk"
)

// The request counts of the matrix (make bench prints them): 31 resources ×
// 8 verbs answered from one rules review, against one access review per
// cell, with the same answers.
func TestAccessRequestCounts(t *testing.T) {
	rules := []authzv1.ResourceRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "configmaps"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"apps"}, Resources: []string{"*"}, Verbs: []string{"*"}},
	}
	var resources []resource.Resource
	for i := range 31 {
		r := resource.Resource{Version: "v1", Name: fmt.Sprintf("res%02d", i), Namespaced: true, Verbs: DefaultVerbs}
		switch i {
		case 0:
			r.Name = "pods"
		case 1:
			r.Name = "configmaps"
		case 2, 3:
			r.Group = "apps"
		}
		resources = append(resources, r)
	}
	// What the authorizer answers, written from the two rules by hand: read
	// verbs on pods and configmaps, every verb on the two apps resources.
	allow := map[string]bool{}
	want := map[string]bool{}
	for _, v := range []string{"get", "list", "watch"} {
		for _, r := range []string{"pods", "configmaps"} {
			allow[allowKey("team-a", v, "", r, "")] = true
			want[r+" "+v] = true
		}
	}
	for _, v := range DefaultVerbs {
		for _, r := range []string{"res02", "res03"} {
			allow[allowKey("team-a", v, "apps", r, "")] = true
			want[r+".apps "+v] = true
		}
	}
	peak := 0
	count := func(force bool) (*Matrix, int) {
		f := &fakeAuthz{rules: map[string][]authzv1.ResourceRule{"team-a": rules}, allow: allow, delay: 5 * time.Millisecond}
		defer func() { peak = max(peak, f.peak) }()
		srv := httptest.NewServer(f)
		defer srv.Close()
		c := newClient(t, srv.URL)
		m, err := c.Access(context.Background(), resources, AccessOptions{Namespace: "team-a", ForceSSAR: force})
		require.NoError(t, err)
		ssrr, ssar := f.counts()
		assert.Equal(t, ssrr+ssar, m.Requests, "the matrix reports the requests the server received")
		return m, ssrr + ssar
	}
	byRules, nRules := count(false)
	bySSAR, nSSAR := count(true)
	for _, m := range []*Matrix{byRules, bySSAR} {
		for _, row := range m.Rows {
			for _, v := range DefaultVerbs {
				assert.Equal(t, want[row.Resource+" "+v], row.Cells[v].Allowed, "%s %s", row.Resource, v)
			}
		}
	}
	assert.Equal(t, 1, nRules)
	assert.Equal(t, 31*8, nSSAR)
	assert.Equal(t, 8, peak, "access reviews 8 at a time (docs/inspection.md)")
	t.Logf("access matrix, 31 resources x 8 verbs: %d request with the rules review, %d with one access review per cell", nRules, nSSAR)
}

// TestAccessIncompleteReview: with an authorizer besides RBAC in the chain
// the rules review says incomplete, and cannot be trusted either way: every
// cell is asked, the access review's answer stands, and the cells it
// decides against RBAC's rules are marked.
func TestAccessIncompleteReview(t *testing.T) {
	rules := []authzv1.ResourceRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}}
	// The stand-in chain: a webhook denies get pods (RBAC allows it) and
	// allows delete pods (RBAC does not); RBAC's list pods stands.
	allow := map[string]bool{allowKey("team-a", "list", "", "pods", ""): true, allowKey("team-a", "delete", "", "pods", ""): true}
	f := &fakeAuthz{rules: map[string][]authzv1.ResourceRule{"team-a": rules}, allow: allow, incomplete: map[string]bool{"team-a": true}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	pods := resource.Resource{Version: "v1", Name: "pods", Namespaced: true, Verbs: []string{"get", "list", "delete"}}
	m, err := newClient(t, srv.URL).Access(context.Background(), []resource.Resource{pods}, AccessOptions{Namespace: "team-a", Verbs: []string{"get", "list", "delete"}})
	require.NoError(t, err)
	assert.True(t, m.Incomplete)
	cells := m.Rows[0].Cells
	assert.Equal(t, Cell{Allowed: false, Source: FromAccessReview, DecidedElsewhere: true}, cells["get"], "denied by the webhook")
	assert.Equal(t, Cell{Allowed: true, Source: FromAccessReview}, cells["list"], "RBAC's answer, confirmed")
	assert.Equal(t, Cell{Allowed: true, Source: FromAccessReview, DecidedElsewhere: true}, cells["delete"], "allowed by the webhook")
	ssrr, ssar := f.counts()
	assert.Equal(t, 1, ssrr)
	assert.Equal(t, 3, ssar, "every cell asked")
}

// TestAccessReviewBudget: with an incomplete review every cell is an access
// review; MaxReviews refuses the matrix before any is sent.
func TestAccessReviewBudget(t *testing.T) {
	f := &fakeAuthz{rules: map[string][]authzv1.ResourceRule{}, incomplete: map[string]bool{"team-a": true}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	pods := resource.Resource{Version: "v1", Name: "pods", Namespaced: true, Verbs: []string{"get", "list", "delete"}}
	c := newClient(t, srv.URL)
	for _, tt := range []struct {
		max     int
		wantErr bool
	}{{0, false}, {3, false}, {2, true}, {-1, true}} {
		_, err := c.Access(context.Background(), []resource.Resource{pods}, AccessOptions{Namespace: "team-a", Verbs: []string{"get", "list", "delete"}, MaxReviews: tt.max})
		if tt.wantErr {
			assert.ErrorIs(t, err, ErrTooManyReviews, "max %d", tt.max)
		} else {
			assert.NoError(t, err, "max %d", tt.max)
		}
	}
	_, ssar := f.counts()
	assert.Equal(t, 3+3, ssar, "the refused matrices sent no access review")
}

// TestAccessStreaming: kubectl exec works with get and create on pods/exec
// (WebSockets, Kubernetes 1.35+); create alone, enough for SPDY, is not.
func TestAccessStreaming(t *testing.T) {
	rules := []authzv1.ResourceRule{
		{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"pods/portforward"}, Verbs: []string{"get", "create"}},
	}
	f := &fakeAuthz{rules: map[string][]authzv1.ResourceRule{"team-a": rules}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	var resources []resource.Resource
	for _, n := range []string{"pods/exec", "pods/portforward", "pods/attach"} {
		resources = append(resources, resource.Resource{Version: "v1", Name: n, Namespaced: true, Verbs: []string{"get", "create"}})
	}
	m, err := newClient(t, srv.URL).Access(context.Background(), resources, AccessOptions{Namespace: "team-a", Verbs: []string{"get", "create"}})
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"kubectl exec": false, "kubectl port-forward": true, "kubectl attach": false}, m.Streaming)
	m, err = newClient(t, srv.URL).Access(context.Background(), resources, AccessOptions{Namespace: "team-a", Verbs: []string{"create"}})
	require.NoError(t, err)
	assert.Nil(t, m.Streaming, "without get in the columns, nothing is said")
}

// TestAccessEscalation: the namespace's escalation checks answered from the
// rules review (an access review where resourceNames leave them open); the
// cluster's asked only where a rule might grant them (a RoleBinding's rules
// grant nothing at cluster scope); and the impersonate-on cells of the
// modes held only.
func TestAccessEscalation(t *testing.T) {
	rules := []authzv1.ResourceRule{
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles"}, Verbs: []string{"bind"}},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"impersonate"}, ResourceNames: []string{"deployer"}},
		{APIGroups: []string{risk.ImpersonationGroup}, Resources: []string{"serviceaccounts"}, Verbs: []string{"impersonate:serviceaccount"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"impersonate-on:serviceaccount:get", "impersonate-on:user-info:list"}},
		// As a RoleBinding of team-a would list it: the server says no.
		{APIGroups: []string{risk.ImpersonationGroup}, Resources: []string{"users"}, Verbs: []string{"impersonate:user-info"}},
	}
	f := &fakeAuthz{rules: map[string][]authzv1.ResourceRule{"team-a": rules}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	pods := resource.Resource{Version: "v1", Name: "pods", Namespaced: true, Verbs: []string{"get", "list"}}
	m, err := newClient(t, srv.URL).Access(context.Background(), []resource.Resource{pods},
		AccessOptions{Namespace: "team-a", Verbs: []string{"get", "list"}, Escalation: true})
	require.NoError(t, err)
	require.Len(t, m.Escalation, len(risk.EscalationChecks))
	got := map[string]Cell{}
	for _, e := range m.Escalation {
		if e.Allowed || e.Partial || e.Source == FromAccessReview {
			got[e.Verb+" "+e.Resource+" "+e.Namespace] = e.Cell
		} else {
			assert.Equal(t, FromRules, e.Source, "%s: no rule grants it", e.Verb)
		}
	}
	assert.Equal(t, map[string]Cell{
		"impersonate serviceaccounts team-a":                                      {Source: FromAccessReview, Partial: true}, // some names: asked, and the server says no for any name
		"bind roles.rbac.authorization.k8s.io team-a":                             {Allowed: true, Source: FromRules},
		"impersonate:serviceaccount serviceaccounts.authentication.k8s.io team-a": {Allowed: true, Source: FromRules},
	}, got, "impersonate:user-info: the cluster's rules (reviewed apart) do not grant it")
	// user-info is not held at cluster scope: its impersonate-on cells are
	// not asked, although RBAC names one.
	require.Equal(t, []string{risk.ModeServiceAccount}, slices.Collect(maps.Keys(m.ImpersonateOn)))
	assert.Equal(t, map[string]Cell{"get": {Allowed: true, Source: FromRules}, "list": {Source: FromRules}}, m.ImpersonateOn[risk.ModeServiceAccount][0].Cells)
	ssrr, ssar := f.counts()
	assert.Equal(t, 2, ssrr, "the namespace's rules, and the cluster's (a rule of the first might grant a cluster check)")
	assert.Equal(t, 1, ssar, "the one check the rules leave open")
	assert.Equal(t, 3, m.Requests)

	// The next namespace of the run reuses the cluster's cells.
	next, err := newClient(t, srv.URL).Access(context.Background(), []resource.Resource{pods},
		AccessOptions{Namespace: "team-a", Verbs: []string{"get", "list"}, Escalation: true, ClusterEscalation: m.ClusterEscalation()})
	require.NoError(t, err)
	assert.Equal(t, m.Escalation, next.Escalation)
	ssrr, ssar = f.counts()
	assert.Equal(t, 3, ssrr)
	assert.Equal(t, 1+1, ssar, "the namespace's open check alone")

	// The cluster's rules grant impersonate:user-info for some names: ~.
	f.rules[rbaceval.ClusterScopeNamespace] = []authzv1.ResourceRule{{APIGroups: []string{risk.ImpersonationGroup}, Resources: []string{"users"}, Verbs: []string{"impersonate:user-info"}, ResourceNames: []string{"alice"}}}
	m, err = newClient(t, srv.URL).Access(context.Background(), []resource.Resource{pods}, AccessOptions{Namespace: "team-a", Verbs: []string{"get", "list"}, Escalation: true})
	require.NoError(t, err)
	i := slices.IndexFunc(m.Escalation, func(e EscalationCell) bool { return e.Mode == risk.ModeUserInfo })
	assert.Equal(t, Cell{Source: FromAccessReview, Partial: true}, m.Escalation[i].Cell)
	assert.Contains(t, m.ImpersonateOn, risk.ModeUserInfo, "held for some names: its impersonate-on cells are shown")

	// An incomplete review: every cell asked, impersonate-on ones included.
	f = &fakeAuthz{rules: map[string][]authzv1.ResourceRule{"team-a": rules}, incomplete: map[string]bool{"team-a": true, rbaceval.ClusterScopeNamespace: true},
		allow: map[string]bool{allowKey("team-a", "impersonate:serviceaccount", risk.ImpersonationGroup, "serviceaccounts", ""): true,
			allowKey("team-a", "impersonate-on:serviceaccount:list", "", "pods", ""): true}}
	srv2 := httptest.NewServer(f)
	defer srv2.Close()
	m, err = newClient(t, srv2.URL).Access(context.Background(), []resource.Resource{pods},
		AccessOptions{Namespace: "team-a", Verbs: []string{"get", "list"}, Escalation: true, MaxReviews: 27})
	require.NoError(t, err)
	assert.Equal(t, map[string]Cell{"get": {Source: FromAccessReview, DecidedElsewhere: true}, "list": {Allowed: true, Source: FromAccessReview, DecidedElsewhere: true}},
		m.ImpersonateOn[risk.ModeServiceAccount][0].Cells)
	_, ssar = f.counts()
	assert.Equal(t, 2+len(risk.EscalationChecks)+2, ssar, "the rows, every escalation check, the impersonate-on cells")
	_, err = newClient(t, srv2.URL).Access(context.Background(), []resource.Resource{pods},
		AccessOptions{Namespace: "team-a", Verbs: []string{"get", "list"}, Escalation: true, MaxReviews: 26})
	assert.ErrorIs(t, err, ErrTooManyReviews, "the impersonate-on cells of every mode that may be held count, before any review is sent")
	_, ssar = f.counts()
	assert.Equal(t, 2+len(risk.EscalationChecks)+2, ssar, "none sent")
}

// TestClusterEscalation: at cluster scope (no rules review) every
// cluster-scoped check is an access review, asked as kube-apiserver's
// impersonation filter asks it.
func TestClusterEscalation(t *testing.T) {
	f := &fakeAuthz{allow: map[string]bool{allowKey("", "impersonate:associated-node", risk.ImpersonationGroup, "nodes", "*"): true,
		allowKey("", "impersonate", risk.ImpersonationGroup, "uids", ""): true}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	m, err := newClient(t, srv.URL).Access(context.Background(), nil, AccessOptions{ForceSSAR: true, Escalation: true})
	require.NoError(t, err)
	assert.Equal(t, 12, m.Requests)
	var allowed []string
	for _, c := range m.Escalation {
		assert.Empty(t, c.Namespace)
		if c.Allowed {
			allowed = append(allowed, c.Verb+" "+c.Resource)
		}
	}
	assert.Equal(t, []string{"impersonate uids.authentication.k8s.io", "impersonate:associated-node nodes.authentication.k8s.io"}, allowed)
	assert.Equal(t, []string{risk.ModeAssociatedNode}, slices.Collect(maps.Keys(m.ImpersonateOn)))
	_, err = newClient(t, srv.URL).Access(context.Background(), nil, AccessOptions{ForceSSAR: true, Escalation: true, MaxReviews: 11})
	assert.ErrorIs(t, err, ErrTooManyReviews)
}

func TestClusterScoped(t *testing.T) {
	for _, tt := range []struct {
		verb, resource string
		want           bool
	}{
		{"impersonate", "users", true},
		{"impersonate", "groups", true},
		{"impersonate", "serviceaccounts", false},
		{"impersonate", "uids.authentication.k8s.io", true},
		{"impersonate", "userextras.authentication.k8s.io/scopes", true},
		{"impersonate:user-info", "users.authentication.k8s.io", true},
		{"impersonate:arbitrary-node", "nodes.authentication.k8s.io", true},
		{"impersonate:serviceaccount", "serviceaccounts.authentication.k8s.io", false},
		{"bind", "clusterroles.rbac.authorization.k8s.io", false}, // a RoleBinding's namespace
		{"bind", "roles.rbac.authorization.k8s.io", false},
		{"escalate", "clusterroles.rbac.authorization.k8s.io", true},
		{"get", "users", false},
		{"impersonate-on:user-info:list", "pods", false},
	} {
		assert.Equal(t, tt.want, rbaceval.ParseTarget(tt.verb, tt.resource, "", "team-a").ClusterScoped(), "%s %s", tt.verb, tt.resource)
	}
}

// The extra is asked for every key (the subresource) and value (the name),
// as the server asks a large set: a rule for some keys grants some of it,
// a bare "userextras" rule none (RBAC matches "userextras/KEY").
func TestEscalationUserExtras(t *testing.T) {
	i := slices.IndexFunc(risk.EscalationChecks, func(e risk.EscalationCheck) bool { return e.Verb == "impersonate" && e.Resource == "userextras" })
	check := risk.EscalationChecks[i]
	assert.Equal(t, authzv1.ResourceAttributes{Verb: "impersonate", Group: risk.ImpersonationGroup, Resource: "userextras", Subresource: "*", Name: "*"}, checkAttributes(check, "team-a"))
	for _, tt := range []struct {
		resources []string
		want      Cell
	}{
		{[]string{"userextras/scopes"}, Cell{Source: FromRules, Partial: true}},
		{[]string{"*/scopes"}, Cell{Source: FromRules, Partial: true}},
		{[]string{"userextras"}, Cell{Source: FromRules}},
		{[]string{"userextras/*"}, Cell{Source: FromRules, Allowed: true}},
		{[]string{"*"}, Cell{Source: FromRules, Allowed: true}},
	} {
		p := &planner{rules: []authzv1.ResourceRule{{APIGroups: []string{risk.ImpersonationGroup}, Resources: tt.resources, Verbs: []string{"impersonate"}}}}
		assert.Equal(t, tt.want, checkAnswer(check, p), "%v", tt.resources)
	}
}
