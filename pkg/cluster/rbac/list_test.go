package rbac

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authzv1 "k8s.io/api/authorization/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/resource"
)

// fakeAuthz answers rules reviews from per-namespace rules, and access
// reviews from a table of answers written by hand (never computed by the
// matcher under test), counting both: the counts asserted are the
// server's, not the client's own.
type fakeAuthz struct {
	mu         sync.Mutex
	rules      map[string][]authzv1.ResourceRule
	allow      map[string]bool // allowKey → allowed
	incomplete map[string]bool
	ssrr, ssar int
	// delay holds each request, so that concurrent ones overlap; peak is
	// the most requests in flight at once.
	delay          time.Duration
	inflight, peak int
	// afterRulesReview, when set, is called with the count of rules
	// reviews received so far.
	afterRulesReview func(n int)
}

// allowKey names one access review: namespace, verb, group, resource
// (with "/subresource"), name.
func allowKey(ns, verb, group, resource, name string) string {
	return strings.Join([]string{ns, verb, group, resource, name}, "|")
}

func (f *fakeAuthz) counts() (ssrr, ssar int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ssrr, f.ssar
}

func (f *fakeAuthz) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.inflight++
	f.peak = max(f.peak, f.inflight)
	delay := f.delay
	f.mu.Unlock()
	time.Sleep(delay)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inflight--
	switch {
	case strings.HasSuffix(r.URL.Path, "/selfsubjectrulesreviews"):
		f.ssrr++
		var in authzv1.SelfSubjectRulesReview
		_ = json.NewDecoder(r.Body).Decode(&in)
		in.Status = authzv1.SubjectRulesReviewStatus{ResourceRules: f.rules[in.Spec.Namespace], Incomplete: f.incomplete[in.Spec.Namespace]}
		_ = json.NewEncoder(w).Encode(in)
		if f.afterRulesReview != nil {
			f.afterRulesReview(f.ssrr)
		}
	case strings.HasSuffix(r.URL.Path, "/selfsubjectaccessreviews"):
		f.ssar++
		var in authzv1.SelfSubjectAccessReview
		_ = json.NewDecoder(r.Body).Decode(&in)
		a := in.Spec.ResourceAttributes
		res := a.Resource
		if a.Subresource != "" {
			res += "/" + a.Subresource
		}
		in.Status.Allowed = f.allow[allowKey(a.Namespace, a.Verb, a.Group, res, a.Name)] || f.allow[allowKey(a.Namespace, a.Verb, a.Group, res, "*")]
		_ = json.NewEncoder(w).Encode(in)
	default:
		http.NotFound(w, r)
	}
}

func TestFilter(t *testing.T) {
	getNamed := authzv1.ResourceRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}, ResourceNames: []string{"a", "b"}}
	getAll := authzv1.ResourceRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}
	var objs []resource.Object
	for _, ns := range []string{"p1", "p2", "p3"} {
		for _, n := range []string{"a", "b", "c"} {
			objs = append(objs, resource.Object{Namespace: ns, Name: n})
		}
	}
	cm := resource.Resource{Version: "v1", Name: "configmaps", Namespaced: true}
	for _, tc := range []struct {
		name       string
		incomplete bool
		// webhookDenies: the authorizer denies get of p1/a, which RBAC's
		// rules allow (a webhook before RBAC).
		webhookDenies bool
		forceSSAR     bool
		// local: the rules come from the RBAC objects (LocalRules), not
		// from a review per namespace.
		local    bool
		verbs    []string
		want     []string // ns/name:verbs allowed
		wantSSRR int
		wantSSAR int
	}{
		{name: "rules settle everything", verbs: []string{"get"},
			want: []string{"p1/a:get", "p1/b:get", "p2/a:get", "p2/b:get", "p2/c:get"}, wantSSRR: 3},
		{name: "two verbs", verbs: []string{"get", "delete"},
			want: []string{"p1/a:get", "p1/b:get", "p2/a:get", "p2/b:get", "p2/c:get"}, wantSSRR: 3},
		{name: "incomplete review: every object of that namespace asked", incomplete: true, verbs: []string{"get"},
			want: []string{"p1/a:get", "p1/b:get", "p2/a:get", "p2/b:get", "p2/c:get"}, wantSSRR: 3, wantSSAR: 3},
		{name: "incomplete review, a webhook denies what RBAC allows", incomplete: true, webhookDenies: true, verbs: []string{"get"},
			want: []string{"p1/b:get", "p2/a:get", "p2/b:get", "p2/c:get"}, wantSSRR: 3, wantSSAR: 3},
		{name: "access reviews only", forceSSAR: true, verbs: []string{"get"},
			want: []string{"p1/a:get", "p1/b:get", "p2/a:get", "p2/b:get", "p2/c:get"}, wantSSAR: 9},
		{name: "rules from the RBAC objects: no rules review", local: true, verbs: []string{"get", "delete"},
			want: []string{"p1/a:get", "p1/b:get", "p2/a:get", "p2/b:get", "p2/c:get"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// What the authorizer answers, from the two rules by hand: get of
			// a and b in p1; get and list of every configmap in p2.
			allow := map[string]bool{
				allowKey("p1", "get", "", "configmaps", "a"): true, allowKey("p1", "get", "", "configmaps", "b"): true,
				allowKey("p2", "get", "", "configmaps", "*"): true, allowKey("p2", "list", "", "configmaps", "*"): true,
			}
			if tc.webhookDenies {
				delete(allow, allowKey("p1", "get", "", "configmaps", "a"))
			}
			f := &fakeAuthz{rules: map[string][]authzv1.ResourceRule{"p1": {getNamed}, "p2": {getAll}}, allow: allow,
				incomplete: map[string]bool{"p1": tc.incomplete}}
			srv := httptest.NewServer(f)
			defer srv.Close()
			c := newClient(t, srv.URL)
			opts := FilterOptions{Verbs: tc.verbs, ForceSSAR: tc.forceSSAR}
			if tc.local {
				opts.LocalRules = func(ns string) ([]authzv1.ResourceRule, bool) { return f.rules[ns], false }
			}
			ds, st, err := c.Filter(context.Background(), cm, objs, opts)
			require.NoError(t, err)
			if tc.local {
				assert.Equal(t, 3, st.FromRBACObjects, "the three namespaces from the RBAC objects")
			}
			var got []string
			for _, d := range ds {
				if len(d.Allowed) > 0 {
					got = append(got, fmt.Sprintf("%s/%s:%s", d.Namespace, d.Name, strings.Join(d.Allowed, ",")))
				} else {
					assert.NotEmpty(t, d.Denied, "a denied object says why")
				}
			}
			assert.Equal(t, tc.want, got)
			ssrr, ssar := f.counts()
			assert.Equal(t, tc.wantSSRR, ssrr, "rules reviews the server received")
			assert.Equal(t, tc.wantSSAR, ssar, "access reviews the server received")
			assert.Equal(t, ssrr, st.RulesReviews, "the stats say what was sent")
			assert.Equal(t, ssar, st.AccessReviews)
		})
	}
}

// TestFilterRulesReviewsConcurrently: one rules review per namespace,
// rulesConcurrency at a time, each namespace's rules applied to its own
// objects; a cancelled context stops them with the context's error.
func TestFilterRulesReviewsConcurrently(t *testing.T) {
	const namespaces = 100
	getAll := authzv1.ResourceRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}
	f := &fakeAuthz{rules: map[string][]authzv1.ResourceRule{}, delay: 5 * time.Millisecond}
	var objs []resource.Object
	for i := range namespaces {
		ns := fmt.Sprintf("ns-%03d", i)
		if i%2 == 0 {
			f.rules[ns] = []authzv1.ResourceRule{getAll}
		}
		objs = append(objs, resource.Object{Namespace: ns, Name: "a"}, resource.Object{Namespace: ns, Name: "b"})
	}
	srv := httptest.NewServer(f)
	defer srv.Close()
	cm := resource.Resource{Version: "v1", Name: "configmaps", Namespaced: true}
	var progress []int
	ds, st, err := newClient(t, srv.URL).Filter(context.Background(), cm, objs, FilterOptions{Verbs: []string{"get"},
		Progress: func(done, total int) { progress = append(progress, done); assert.Equal(t, namespaces, total) }})
	require.NoError(t, err)
	assert.Equal(t, namespaces, st.RulesReviews)
	ssrr, ssar := f.counts()
	assert.Equal(t, namespaces, ssrr, "one rules review per namespace")
	assert.Zero(t, ssar)
	assert.LessOrEqual(t, f.peak, rulesConcurrency, "at most rulesConcurrency in flight")
	assert.Greater(t, f.peak, 1, "reviews overlap")
	require.Len(t, progress, namespaces)
	for i, done := range progress {
		assert.Equal(t, i+1, done, "progress counts up to the total")
	}
	for i, d := range ds {
		allowed := (i/2)%2 == 0
		assert.Equal(t, allowed, len(d.Allowed) == 1, "%s/%s", d.Namespace, d.Name)
	}

	// Ctrl-C after 10 reviews: the error, and no new review sent (those
	// in flight, at most rulesConcurrency, still arrive).
	f2 := &fakeAuthz{rules: f.rules, delay: 5 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f2.afterRulesReview = func(n int) {
		if n == 10 {
			cancel()
		}
	}
	srv2 := httptest.NewServer(f2)
	defer srv2.Close()
	_, _, err = newClient(t, srv2.URL).Filter(ctx, cm, objs, FilterOptions{Verbs: []string{"get"}})
	require.ErrorIs(t, err, context.Canceled)
	time.Sleep(50 * time.Millisecond) // what was in flight arrives
	ssrr, _ = f2.counts()
	assert.LessOrEqual(t, ssrr, 10+rulesConcurrency, "no review sent after the cancel")
	assert.Less(t, ssrr, namespaces)
}

func TestFilterDenialReasons(t *testing.T) {
	getNamed := authzv1.ResourceRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}, ResourceNames: []string{"a"}}
	srv := httptest.NewServer(&fakeAuthz{rules: map[string][]authzv1.ResourceRule{"p1": {getNamed}}})
	defer srv.Close()
	c := newClient(t, srv.URL)
	ds, _, err := c.Filter(context.Background(), resource.Resource{Version: "v1", Name: "configmaps", Namespaced: true},
		[]resource.Object{{Namespace: "p1", Name: "z"}}, FilterOptions{Verbs: []string{"get", "delete"}})
	require.NoError(t, err)
	require.Len(t, ds, 1)
	assert.Equal(t, map[string]string{"get": "get is granted for other resourceNames only", "delete": "no rule grants delete on configmaps"}, ds[0].Denied)
}

// TestFilterIncompleteReview: where the rules review says incomplete, every
// object is asked; the answers against RBAC's rules are marked as another
// authorizer's.
func TestFilterIncompleteReview(t *testing.T) {
	rules := []authzv1.ResourceRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}
	// The stand-in chain: a webhook denies a (RBAC grants it) and allows
	// deleting b (RBAC does not).
	f := &fakeAuthz{rules: map[string][]authzv1.ResourceRule{"p1": rules}, incomplete: map[string]bool{"p1": true},
		allow: map[string]bool{allowKey("p1", "get", "", "configmaps", "b"): true, allowKey("p1", "delete", "", "configmaps", "b"): true}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	cm := resource.Resource{Version: "v1", Name: "configmaps", Namespaced: true, Verbs: []string{"get", "delete"}}
	ds, st, err := newClient(t, srv.URL).Filter(context.Background(), cm, []resource.Object{{Namespace: "p1", Name: "a"}, {Namespace: "p1", Name: "b"}},
		FilterOptions{Verbs: []string{"get", "delete"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"p1"}, st.Incomplete)
	assert.Empty(t, ds[0].Allowed)
	assert.Equal(t, []string{"get"}, ds[0].DecidedElsewhere, "a: get denied against RBAC's rules")
	assert.Equal(t, []string{"get", "delete"}, ds[1].Allowed)
	assert.Equal(t, []string{"delete"}, ds[1].DecidedElsewhere, "b: delete allowed against RBAC's rules")
}
