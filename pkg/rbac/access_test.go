package rbac

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authzv1 "k8s.io/api/authorization/v1"
)

func TestRuleAllows(t *testing.T) {
	rule := func(groups, resources, verbs, names []string) authzv1.ResourceRule {
		return authzv1.ResourceRule{APIGroups: groups, Resources: resources, Verbs: verbs, ResourceNames: names}
	}
	tests := []struct {
		name                     string
		rule                     authzv1.ResourceRule
		group, resource, verb    string
		wantAllowed, wantPartial bool
	}{
		{"exact", rule([]string{""}, []string{"pods"}, []string{"get"}, nil), "", "pods", "get", true, false},
		{"other verb", rule([]string{""}, []string{"pods"}, []string{"get"}, nil), "", "pods", "list", false, false},
		{"other group", rule([]string{"apps"}, []string{"pods"}, []string{"get"}, nil), "", "pods", "get", false, false},
		{"wildcard verbs", rule([]string{""}, []string{"pods"}, []string{"*"}, nil), "", "pods", "delete", true, false},
		{"wildcard groups and resources", rule([]string{"*"}, []string{"*"}, []string{"get"}, nil), "apps", "deployments", "get", true, false},
		{"resourceNames: partial", rule([]string{""}, []string{"configmaps"}, []string{"get"}, []string{"a", "b"}), "", "configmaps", "get", false, true},
		{"subresource needs its own rule", rule([]string{""}, []string{"pods"}, []string{"get"}, nil), "", "pods/log", "get", false, false},
		{"subresource exact", rule([]string{""}, []string{"pods/log"}, []string{"get"}, nil), "", "pods/log", "get", true, false},
		// Kubernetes' RBAC has no "resource/*" form: the rule matches nothing
		// (a review found the earlier expansion over-reporting).
		{"pods/* is not every subresource", rule([]string{""}, []string{"pods/*"}, []string{"get"}, nil), "", "pods/exec", "get", false, false},
		{"pods/* is not pods", rule([]string{""}, []string{"pods/*"}, []string{"get"}, nil), "", "pods", "get", false, false},
		{"* matches subresources", rule([]string{""}, []string{"*"}, []string{"get"}, nil), "", "pods/log", "get", true, false},
		{"*/log is not */logs", rule([]string{""}, []string{"*/log"}, []string{"get"}, nil), "", "pods/logs", "get", false, false},
		{"*/scale needs the group", rule([]string{""}, []string{"*/scale"}, []string{"update"}, nil), "apps", "deployments/scale", "update", false, false},
		{"*/scale", rule([]string{"apps"}, []string{"*/scale"}, []string{"update"}, nil), "apps", "deployments/scale", "update", true, false},
		{"*/scale is not the resource", rule([]string{"apps"}, []string{"*/scale"}, []string{"update"}, nil), "apps", "deployments", "update", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, p := RuleAllows(tt.rule, tt.group, tt.resource, tt.verb)
			assert.Equal(t, tt.wantAllowed, a)
			assert.Equal(t, tt.wantPartial, p)
		})
	}
}

// The request counts of the matrix (make bench prints them): 31 resources ×
// 8 verbs answered from one rules review, against one access review per
// cell, with the same answers.
func TestAccessRequestCounts(t *testing.T) {
	rules := []authzv1.ResourceRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "configmaps"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"apps"}, Resources: []string{"*"}, Verbs: []string{"*"}},
	}
	var resources []Resource
	for i := range 31 {
		r := Resource{Version: "v1", Name: fmt.Sprintf("res%02d", i), Namespaced: true, Verbs: DefaultVerbs}
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
	pods := Resource{Version: "v1", Name: "pods", Namespaced: true, Verbs: []string{"get", "list", "delete"}}
	m, err := newClient(t, srv.URL).Access(context.Background(), []Resource{pods}, AccessOptions{Namespace: "team-a", Verbs: []string{"get", "list", "delete"}})
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
	pods := Resource{Version: "v1", Name: "pods", Namespaced: true, Verbs: []string{"get", "list", "delete"}}
	c := newClient(t, srv.URL)
	for _, tt := range []struct {
		max     int
		wantErr bool
	}{{0, false}, {3, false}, {2, true}, {-1, true}} {
		_, err := c.Access(context.Background(), []Resource{pods}, AccessOptions{Namespace: "team-a", Verbs: []string{"get", "list", "delete"}, MaxReviews: tt.max})
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
	var resources []Resource
	for _, n := range []string{"pods/exec", "pods/portforward", "pods/attach"} {
		resources = append(resources, Resource{Version: "v1", Name: n, Namespaced: true, Verbs: []string{"get", "create"}})
	}
	m, err := newClient(t, srv.URL).Access(context.Background(), resources, AccessOptions{Namespace: "team-a", Verbs: []string{"get", "create"}})
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"kubectl exec": false, "kubectl port-forward": true, "kubectl attach": false}, m.Streaming)
	m, err = newClient(t, srv.URL).Access(context.Background(), resources, AccessOptions{Namespace: "team-a", Verbs: []string{"create"}})
	require.NoError(t, err)
	assert.Nil(t, m.Streaming, "without get in the columns, nothing is said")
}
