package elevation

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeAPI answers as the cluster's storage does, no admission: what it
// was sent is kept, a GET returns the object kept at that path.
type fakeAPI struct {
	user    string
	objects map[string][]byte
	posted  []string
}

func (f *fakeAPI) Get(_ context.Context, path string, out any) error {
	return json.Unmarshal(f.objects[path], out)
}

func (f *fakeAPI) Post(_ context.Context, path string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	f.posted = append(f.posted, path)
	return json.Unmarshal(b, out)
}

func (f *fakeAPI) Delete(_ context.Context, path string) error {
	f.posted = append(f.posted, "DELETE "+path)
	return nil
}

func (f *fakeAPI) WhoAmI(context.Context) (*authnv1.UserInfo, string, error) {
	return &authnv1.UserInfo{Username: f.user}, "v1", nil
}

// Ask names the caller as the requester, whatever the spec said; Approve
// copies the request as the cluster holds it, not as anyone retells it,
// and signs with the caller.
func TestAskAndApprove(t *testing.T) {
	f := &fakeAPI{user: "alice", objects: map[string][]byte{}}
	r, err := Ask(context.Background(), f, "payments", RequestSpec{Requester: "mallory", Role: "edit",
		DurationSeconds: 1800, Reason: "INC-1", Ticket: "INC-1"})
	require.NoError(t, err)
	assert.Equal(t, "alice", r.Spec.Requester)
	assert.Equal(t, "sudo-", r.GenerateName)
	assert.Equal(t, []string{"/apis/sudo.kubectl-impersonate.io/v1alpha1/namespaces/payments/sudorequests"}, f.posted)

	held := Request{ObjectMeta: metav1.ObjectMeta{Name: "sudo-x", Namespace: "payments"},
		Spec: RequestSpec{Requester: "alice", Role: "edit", DurationSeconds: 1800, Reason: "INC-1", Ticket: "T"}}
	f.objects["/apis/sudo.kubectl-impersonate.io/v1alpha1/namespaces/payments/sudorequests/sudo-x"], _ = json.Marshal(held)
	f.user = "bob"
	g, err := Approve(context.Background(), f, "payments", "sudo-x")
	require.NoError(t, err)
	assert.Equal(t, GrantSpec{Request: "sudo-x", Requester: "alice", Role: "edit", DurationSeconds: 1800, Reason: "INC-1",
		Ticket: "T", Approver: "bob"}, g.Spec)
	assert.Equal(t, "sudo-x", g.Name, "named as its request")
	assert.True(t, g.Matches(held))
	require.NoError(t, Revoke(context.Background(), f, "payments", "sudo-x"))
	assert.Contains(t, f.posted, "DELETE /apis/sudo.kubectl-impersonate.io/v1alpha1/namespaces/payments/sudogrants/sudo-x")
}

// A grant ends at its creation time plus its duration; it matches its
// request only field for field.
func TestGrantEndsAndMatches(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	r := Request{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "p"},
		Spec: RequestSpec{Requester: "alice", Role: "edit", DurationSeconds: 600, Reason: "why", Ticket: "T"}}
	g := Grant{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "p", CreationTimestamp: metav1.NewTime(start)},
		Spec: GrantSpec{Request: "a", Requester: "alice", Role: "edit", DurationSeconds: 600, Reason: "why", Ticket: "T",
			Approver: "bob"}}
	assert.Equal(t, start.Add(10*time.Minute), g.Ends())
	assert.True(t, g.Matches(r))
	for name, change := range map[string]func(*Grant){
		"another requester": func(g *Grant) { g.Spec.Requester = "mallory" },
		"another role":      func(g *Grant) { g.Spec.Role = "admin" },
		"longer":            func(g *Grant) { g.Spec.DurationSeconds = 601 },
		"another request":   func(g *Grant) { g.Spec.Request = "b" },
		"another name":      func(g *Grant) { g.Name = "b" },
		"another namespace": func(g *Grant) { g.Namespace = "q" },
		"another reason":    func(g *Grant) { g.Spec.Reason = "else" },
		"another ticket":    func(g *Grant) { g.Spec.Ticket = "U" },
	} {
		c := g
		change(&c)
		assert.False(t, c.Matches(r), name)
	}
}

// Pending: the requests without a grant of their name in their namespace,
// oldest first.
func TestPending(t *testing.T) {
	at := func(ns, name string, min int) Request {
		return Request{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, min, 0, 0, time.UTC))}}
	}
	reqs := []Request{at("p", "c", 3), at("p", "a", 1), at("q", "a", 2), at("p", "b", 1)}
	grants := []Grant{{ObjectMeta: metav1.ObjectMeta{Namespace: "p", Name: "a"}}}
	var names []string
	for _, r := range Pending(reqs, grants) {
		names = append(names, r.Namespace+"/"+r.Name)
	}
	assert.Equal(t, []string{"p/b", "q/a", "p/c"}, names)
}
