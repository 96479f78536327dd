package authz

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbac"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbaceval"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/resource"
)

// The API server behind the inspection commands' seams, one fake per seam
// (pkg/cluster/inspect's interfaces are made of them): fakeIdentity (who
// the identity is), fakeDiscovery (what the server serves, and kubectl's
// cache of it), fakeObjects (the RBAC objects, namespaces and objects the
// identity reads) and fakeAuthorizer (the authorizer chain: why, verify,
// rules reviews, the access matrices, a list's decisions). Each answers
// what the test gives it and records what it was asked in the one
// recorder of its fakeCluster, in order. The answers' correctness against
// a real kube-apiserver is the e2e suite's (test/e2e/rbac_diff_test.go);
// these tests check what Run does with them.

// recorder is what a fakeCluster's seams were asked, in order.
type recorder struct {
	mu    sync.Mutex
	asked []string // "Access ns", "ReadRBAC ns", "List ns", ...
}

func (r *recorder) record(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, s)
}

// fakeCluster is the four seams of one identity, sharing a recorder
// (newCluster ties them).
type fakeCluster struct {
	*recorder
	fakeIdentity
	fakeDiscovery
	fakeObjects
	fakeAuthorizer
}

// newCluster ties f's seams: one recorder, and the authorizer's owner.
func newCluster(f *fakeCluster) *fakeCluster {
	r := &recorder{}
	f.recorder, f.fakeObjects.rec, f.fakeAuthorizer.rec = r, r, r
	f.fakeAuthorizer.owner = &f.fakeIdentity
	return f
}

// fakeIdentity is WhoAmIClient: the identity the server names.
type fakeIdentity struct{ user authnv1.UserInfo }

func (f *fakeIdentity) WhoAmI(context.Context) (*authnv1.UserInfo, string, error) {
	u := f.user
	return &u, "v1", nil
}

func (f *fakeIdentity) SelfSubjectReview(ctx context.Context) (*authnv1.SelfSubjectReview, string, error) {
	ui, v, err := f.WhoAmI(ctx)
	if err != nil {
		return nil, "", err
	}
	ssr := &authnv1.SelfSubjectReview{Status: authnv1.SelfSubjectReviewStatus{UserInfo: *ui}}
	ssr.APIVersion, ssr.Kind = "authentication.k8s.io/"+v, "SelfSubjectReview"
	return ssr, v, nil
}

// fakeDiscovery is Discoverer: resources are the server's answer;
// cachedResources, when set, is what kubectl's discovery cache holds until
// Invalidate; discoveries counts Discover calls.
type fakeDiscovery struct {
	resources, cachedResources []resource.Resource
	invalidated                bool
	discoveries                int
}

func (f *fakeDiscovery) Discover(context.Context, bool) ([]resource.Resource, error) {
	f.discoveries++
	if f.cachedResources != nil && !f.invalidated {
		return f.cachedResources, nil
	}
	return f.resources, nil
}

// Invalidate is kubectl's cached discovery after a miss: the next
// Discover asks the server (resources instead of cachedResources).
func (f *fakeDiscovery) Invalidate() bool {
	wasCached := f.cachedResources != nil && !f.invalidated
	f.invalidated = true
	return wasCached
}

// fakeObjects is what the identity reads: the RBAC objects (RBACReader,
// or rbacErr), the namespaces and the objects of a list.
type fakeObjects struct {
	rec        *recorder
	rbac       *rbaceval.RBAC
	rbacErr    error
	namespaces []string
	objects    []resource.Object
}

func (f *fakeObjects) ReadRBAC(_ context.Context, ns string) (*rbaceval.RBAC, error) {
	f.rec.record("ReadRBAC " + ns)
	return f.rbac, f.rbacErr
}

func (f *fakeObjects) Namespaces(context.Context) ([]string, error) { return f.namespaces, nil }

func (f *fakeObjects) NamespacesWith(_ context.Context, selector string) ([]string, error) {
	return f.namespaces, nil
}

func (f *fakeObjects) List(_ context.Context, r resource.Resource, ns, _ string, _ bool) ([]resource.Object, error) {
	f.rec.record("List " + ns)
	var out []resource.Object
	for _, o := range f.objects {
		if ns == "" || o.Namespace == ns {
			out = append(out, o)
		}
	}
	return out, nil
}

// fakeAuthorizer is the authorizer chain. why (or whyVerbs, by verb)
// answers Why; denySubjects are its denials for who-can --verify, by
// subject; reviewRules a complete rules review (without them, an
// incomplete one, as with a webhook); allowed (and allowedIn, per
// namespace) the verbs the matrices allow per resource name; escalation
// the matrices' escalation cells (the cluster's are reused from the
// first); delay each matrix's time, reviewsPerMatrix its access reviews;
// inFlight and maxInFlight count the matrices built at once. A list's
// decisions allow the objects named after the identity (owner).
type fakeAuthorizer struct {
	rec              *recorder
	owner            *fakeIdentity
	why              authzv1.SubjectAccessReviewStatus
	whyVerbs         map[string]bool
	denySubjects     map[string]string
	reviewRules      []authzv1.ResourceRule
	allowed          map[string][]string
	allowedIn        map[string]map[string][]string
	escalation       []rbac.EscalationCell
	delay            time.Duration
	reviewsPerMatrix int
	mu               sync.Mutex
	inFlight         atomic.Int32
	maxInFlight      int32
}

func (f *fakeAuthorizer) Why(_ context.Context, t rbaceval.Target) (*authzv1.SubjectAccessReviewStatus, error) {
	f.rec.record("Why " + t.Verb + " " + t.Resource + " " + t.Namespace)
	st := f.why
	if f.whyVerbs != nil {
		st = authzv1.SubjectAccessReviewStatus{Allowed: f.whyVerbs[t.Verb]}
	}
	return &st, nil
}

func (f *fakeAuthorizer) VerifySubject(
	_ context.Context, s rbacv1.Subject, t rbaceval.Target,
) (*authzv1.SubjectAccessReviewStatus, error) {
	f.rec.record("Verify " + s.Kind + ":" + s.Name + " " + t.Verb + " " + t.Resource + " in " + t.Namespace)
	if reason, ok := f.denySubjects[s.Kind+":"+s.Name]; ok {
		return &authzv1.SubjectAccessReviewStatus{Denied: true, Reason: reason}, nil
	}
	return &authzv1.SubjectAccessReviewStatus{Allowed: true}, nil
}

func (f *fakeAuthorizer) RulesReview(context.Context, string) ([]authzv1.ResourceRule, bool, error) {
	f.rec.record("RulesReview")
	if f.reviewRules == nil {
		return nil, true, nil
	}
	return f.reviewRules, false, nil
}

func (f *fakeAuthorizer) Access(ctx context.Context, resources []resource.Resource, o rbac.AccessOptions) (*rbac.Matrix, error) {
	// access -A builds matrices 16 at a time.
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	f.mu.Lock()
	f.maxInFlight = max(f.maxInFlight, n)
	if o.LocalRules != nil {
		rules, _ := o.LocalRules(o.Namespace)
		f.rec.record(fmt.Sprintf("Access %s from %d local rules", o.Namespace, len(rules)))
	} else {
		f.rec.record("Access " + o.Namespace)
	}
	m := &rbac.Matrix{Namespace: o.Namespace, Verbs: o.Verbs, Requests: 1 + f.reviewsPerMatrix}
	if o.Escalation {
		m.Escalation = o.ClusterEscalation
		if m.Escalation == nil {
			f.rec.record("cluster escalation")
			m.Escalation = f.escalation
		}
	}
	f.mu.Unlock()
	if o.Budget != nil {
		if left, ok := o.Budget.Reserve(f.reviewsPerMatrix); !ok {
			return nil, fmt.Errorf("%w: %d left", rbac.ErrTooManyReviews, left)
		}
	}
	select {
	case <-time.After(f.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for _, r := range resources {
		row := rbac.Row{Resource: r.String(), Cells: map[string]rbac.Cell{}}
		for _, v := range o.Verbs {
			allowed := f.allowed[r.Name]
			if in, ok := f.allowedIn[o.Namespace]; ok {
				allowed = append(slices.Clone(allowed), in[r.Name]...)
			}
			row.Cells[v] = rbac.Cell{Allowed: slices.Contains(allowed, v), Source: rbac.FromRules}
		}
		m.Rows = append(m.Rows, row)
	}
	m.SetRisks() // as rbac's Access does
	return m, nil
}

func (f *fakeAuthorizer) Filter(_ context.Context, r resource.Resource, objs []resource.Object, o rbac.FilterOptions) (
	[]rbac.Decision, rbac.FilterStats, error) {
	if o.LocalRules != nil {
		f.rec.record("Filter from local rules")
	} else {
		f.rec.record("Filter")
	}
	var out []rbac.Decision
	for _, obj := range objs {
		d := rbac.Decision{Object: obj, Source: rbac.FromRules}
		if o.LocalRules != nil {
			// The RBAC objects decide: any rule in the object's namespace.
			if rules, _ := o.LocalRules(obj.Namespace); len(rules) > 0 {
				d.Allowed = o.Verbs
			}
		} else if strings.HasPrefix(obj.Name, f.owner.user.Username) {
			d.Allowed = o.Verbs
		}
		out = append(out, d)
	}
	return out, rbac.FilterStats{RulesReviews: 1}, nil
}
