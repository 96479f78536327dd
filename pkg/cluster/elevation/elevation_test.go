package elevation

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/kubeapi"
)

// fakeAPI answers as the cluster's storage does, no admission: what it
// was sent is kept, a GET returns the object kept at that path.
type fakeAPI struct {
	user    string
	objects map[string][]byte
	sent    []string
}

func (f *fakeAPI) Get(_ context.Context, path string, out any) error {
	return json.Unmarshal(f.objects[path], out)
}

func (f *fakeAPI) keep(method, path string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	f.sent = append(f.sent, method+" "+path)
	f.objects[path] = b
	return json.Unmarshal(b, out)
}

func (f *fakeAPI) Post(_ context.Context, path string, in, out any) error {
	return f.keep("POST", path, in, out)
}
func (f *fakeAPI) Put(_ context.Context, path string, in, out any) error {
	return f.keep("PUT", path, in, out)
}

func (f *fakeAPI) WhoAmI(context.Context) (*authnv1.UserInfo, string, error) {
	return &authnv1.UserInfo{Username: f.user}, "v1", nil
}

const reqPath = "/apis/sudo.kubectl-impersonate.io/v1alpha1/namespaces/payments/sudorequests/sudo-x"

func held(approvedBy string) Request {
	r := Request{ObjectMeta: metav1.ObjectMeta{Name: "sudo-x", Namespace: "payments", UID: types.UID("u-1")},
		Spec: RequestSpec{Requester: "alice", Role: "edit", DurationSeconds: 1800, Reason: "INC-1", Ticket: "T"}}
	if approvedBy != "" {
		r.Status = &RequestStatus{ApprovedBy: approvedBy}
	}
	return r
}

// Ask names the caller as the requester, whatever the spec said.
func TestAsk(t *testing.T) {
	f := &fakeAPI{user: "alice", objects: map[string][]byte{}}
	r, err := Ask(context.Background(), f, "payments", RequestSpec{Requester: "mallory", Role: "edit",
		DurationSeconds: 1800, Reason: "INC-1", Ticket: "INC-1"})
	require.NoError(t, err)
	assert.Equal(t, "alice", r.Spec.Requester)
	assert.Equal(t, "sudo-", r.GenerateName)
	assert.Equal(t, []string{"POST /apis/sudo.kubectl-impersonate.io/v1alpha1/namespaces/payments/sudorequests"}, f.sent)
}

// Approve signs the request's status, then starts its grant from the
// request as the cluster holds it, bound to its UID; a request the caller
// approved already gets its grant; one someone else approved is refused.
func TestApprove(t *testing.T) {
	for _, tt := range []struct {
		name, approvedBy string
		sent             []string
		wantErr          string
	}{
		{name: "not approved", sent: []string{"PUT " + reqPath + "/status",
			"POST /apis/sudo.kubectl-impersonate.io/v1alpha1/namespaces/payments/sudogrants"}},
		{name: "approved by the caller, no grant yet", approvedBy: "bob",
			sent: []string{"POST /apis/sudo.kubectl-impersonate.io/v1alpha1/namespaces/payments/sudogrants"}},
		{name: "approved by someone else", approvedBy: "carol", wantErr: "sudo-x in payments was already approved by carol"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeAPI{user: "bob", objects: map[string][]byte{}}
			f.objects[reqPath], _ = json.Marshal(held(tt.approvedBy))
			g, err := Approve(context.Background(), f, "payments", "sudo-x")
			if tt.wantErr != "" {
				assert.EqualError(t, err, tt.wantErr)
				assert.Empty(t, f.sent)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.sent, f.sent)
			assert.Equal(t, GrantSpec{Request: "sudo-x", RequestUID: "u-1", Requester: "alice", Role: "edit",
				DurationSeconds: 1800, Reason: "INC-1", Ticket: "T", Approver: "bob"}, g.Spec)
			if b, ok := f.objects[reqPath+"/status"]; ok {
				var r Request
				require.NoError(t, json.Unmarshal(b, &r))
				assert.Equal(t, "bob", r.ApprovedBy(), "the approval is signed by the caller")
			}
		})
	}
}

// Deny signs the request's status with the caller; a denied request is
// not pending and not approved.
func TestDeny(t *testing.T) {
	f := &fakeAPI{user: "bob", objects: map[string][]byte{}}
	f.objects[reqPath], _ = json.Marshal(held(""))
	require.NoError(t, Deny(context.Background(), f, "payments", "sudo-x"))
	assert.Equal(t, []string{"PUT " + reqPath + "/status"}, f.sent)
	var r Request
	require.NoError(t, json.Unmarshal(f.objects[reqPath+"/status"], &r))
	assert.Equal(t, "bob", r.DeniedBy())
	assert.Empty(t, Pending([]Request{r, held("carol")}), "neither the denied nor the approved")
	assert.Len(t, Pending([]Request{r, held("")}), 1)
	f.objects[reqPath] = f.objects[reqPath+"/status"]
	f.sent = nil
	_, err := Approve(context.Background(), f, "payments", "sudo-x")
	assert.EqualError(t, err, "sudo-x in payments was denied by bob")
	assert.Empty(t, f.sent)
}

// Revoke signs the grant's status with the caller.
func TestRevoke(t *testing.T) {
	f := &fakeAPI{user: "bob", objects: map[string][]byte{}}
	gp := "/apis/sudo.kubectl-impersonate.io/v1alpha1/namespaces/payments/sudogrants/sudo-x"
	f.objects[gp], _ = json.Marshal(Grant{ObjectMeta: metav1.ObjectMeta{Name: "sudo-x", Namespace: "payments"}})
	require.NoError(t, Revoke(context.Background(), f, "payments", "sudo-x"))
	assert.Equal(t, []string{"PUT " + gp + "/status"}, f.sent)
	var g Grant
	require.NoError(t, json.Unmarshal(f.objects[gp+"/status"], &g))
	assert.Equal(t, "bob", g.RevokedBy())
}

// Check: a grant counts only while its request exists, was approved by
// its approver, is copied field for field (its UID too), it is not revoked
// and has not ended (its server-set start plus its duration).
func TestCheck(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	r := held("bob")
	good := Grant{ObjectMeta: metav1.ObjectMeta{Name: "sudo-x", Namespace: "payments", CreationTimestamp: metav1.NewTime(start)},
		Spec: GrantSpec{Request: "sudo-x", RequestUID: "u-1", Requester: "alice", Role: "edit", DurationSeconds: 1800,
			Reason: "INC-1", Ticket: "T", Approver: "bob"}}
	assert.Equal(t, start.Add(30*time.Minute), good.Ends())
	during := start.Add(29 * time.Minute)
	ok, why := Check(good, &r, during)
	assert.True(t, ok, why)
	for _, tt := range []struct {
		name   string
		change func(*Grant, *Request) *Request
		at     time.Time
		why    string
	}{
		{"no request (a grant made up)", func(*Grant, *Request) *Request { return nil }, during, "its request sudo-x does not exist"},
		{"a request made again under the name", func(_ *Grant, r *Request) *Request { r.UID = "u-2"; return r }, during, "does not copy"},
		{"another requester (the approver lied)", func(g *Grant, r *Request) *Request { g.Spec.Requester = "mallory"; return r }, during, "does not copy"},
		{"another role", func(g *Grant, r *Request) *Request { g.Spec.Role = "admin"; return r }, during, "does not copy"},
		{"longer", func(g *Grant, r *Request) *Request { g.Spec.DurationSeconds = 1801; return r }, during, "does not copy"},
		{"another reason", func(g *Grant, r *Request) *Request { g.Spec.Reason = "x"; return r }, during, "does not copy"},
		{"another ticket", func(g *Grant, r *Request) *Request { g.Spec.Ticket = "U"; return r }, during, "does not copy"},
		{"no UID", func(g *Grant, r *Request) *Request { g.Spec.RequestUID, r.UID = "", ""; return r }, during, "does not copy"},
		{"the request not approved", func(_ *Grant, r *Request) *Request { r.Status = nil; return r }, during, "not approved by bob"},
		{"approved by someone else", func(_ *Grant, r *Request) *Request { r.Status.ApprovedBy = "carol"; return r }, during, "not approved by bob"},
		{"revoked", func(g *Grant, r *Request) *Request { g.Status = &GrantStatus{RevokedBy: "erin"}; return r }, during, "revoked by erin"},
		{"at its end", func(_ *Grant, r *Request) *Request { return r }, start.Add(30 * time.Minute), "expired at 2026-11-29T12:30:00Z"},
		{"deleted, kept by a finalizer", func(g *Grant, r *Request) *Request {
			g.DeletionTimestamp = &metav1.Time{Time: start}
			return r
		}, during, "being deleted"},
		{"its request deleted, kept by a finalizer", func(_ *Grant, r *Request) *Request {
			r.DeletionTimestamp = &metav1.Time{Time: start}
			return r
		}, during, "being deleted"},
	} {
		g, req := good, held("bob")
		got, why := Check(g, tt.change(&g, &req), tt.at)
		assert.False(t, got, tt.name)
		assert.Contains(t, why, tt.why, tt.name)
	}
}

// Pending: the requests no one approved, oldest first; RequestOf finds a
// grant's request in its namespace.
func TestPendingAndRequestOf(t *testing.T) {
	at := func(ns, name string, min int, approvedBy string) Request {
		r := Request{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, min, 0, 0, time.UTC))}}
		if approvedBy != "" {
			r.Status = &RequestStatus{ApprovedBy: approvedBy}
		}
		return r
	}
	reqs := []Request{at("p", "c", 3, ""), at("p", "a", 1, "bob"), at("q", "a", 2, ""), at("p", "b", 1, "")}
	var names []string
	for _, r := range Pending(reqs) {
		names = append(names, r.Namespace+"/"+r.Name)
	}
	assert.Equal(t, []string{"p/b", "q/a", "p/c"}, names)
	got := RequestOf(Grant{ObjectMeta: metav1.ObjectMeta{Namespace: "q"}, Spec: GrantSpec{Request: "a"}}, reqs)
	require.NotNil(t, got)
	assert.Equal(t, "q", got.Namespace)
	assert.Nil(t, RequestOf(Grant{ObjectMeta: metav1.ObjectMeta{Namespace: "r"}, Spec: GrantSpec{Request: "a"}}, reqs))
}

// TestRef: a grant's name across namespaces, and the only forms read back
// as one (the extra a caller sends is parsed by ParseRef).
func TestRef(t *testing.T) {
	g := Grant{ObjectMeta: metav1.ObjectMeta{Namespace: "payments", Name: "sudo-x7k2p"}}
	assert.Equal(t, "payments/sudo-x7k2p", g.Ref())
	for _, tc := range []struct {
		ref      string
		ns, name string
		ok       bool
	}{
		{"payments/sudo-x7k2p", "payments", "sudo-x7k2p", true},
		{"payments", "", "", false},
		{"/sudo-x7k2p", "", "", false},
		{"payments/", "", "", false},
		{"payments/a/b", "", "", false},
		{"", "", "", false},
		{"/", "", "", false},
	} {
		ns, name, ok := ParseRef(tc.ref)
		assert.Equal(t, tc.ok, ok, tc.ref)
		if tc.ok {
			assert.Equal(t, [2]string{tc.ns, tc.name}, [2]string{ns, name}, tc.ref)
			assert.Equal(t, tc.ref, Ref(ns, name), "Ref and ParseRef agree")
		}
	}
}

// objectsAPI answers GETs as kube-apiserver does: the object kept at the
// path, 404 when there is none, fail for every GET when set.
type objectsAPI struct {
	fakeAPI
	fail error
}

func (f *objectsAPI) Get(_ context.Context, path string, out any) error {
	if f.fail != nil {
		return f.fail
	}
	b, ok := f.objects[path]
	if !ok {
		return &kubeapi.APIError{Code: 404, Reason: "NotFound", Message: path + " not found"}
	}
	return json.Unmarshal(b, out)
}

// Live: the grant a kubeconfig names counts, or says why not: every way
// Check refuses reaches the caller, and a request that cannot be read is
// an error, not "no request".
func TestLive(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	grantPath := "/apis/sudo.kubectl-impersonate.io/v1alpha1/namespaces/payments/sudogrants/sudo-x"
	good := Grant{ObjectMeta: metav1.ObjectMeta{Name: "sudo-x", Namespace: "payments", CreationTimestamp: metav1.NewTime(start)},
		Spec: GrantSpec{Request: "sudo-x", RequestUID: "u-1", Requester: "alice", Role: "edit", DurationSeconds: 1800,
			Reason: "INC-1", Ticket: "T", Approver: "bob"}}
	api := func(g *Grant, r *Request) *objectsAPI {
		f := &objectsAPI{fakeAPI: fakeAPI{objects: map[string][]byte{}}}
		if g != nil {
			f.objects[grantPath], _ = json.Marshal(g)
		}
		if r != nil {
			f.objects[reqPath], _ = json.Marshal(r)
		}
		return f
	}
	ctx := context.Background()
	during := start.Add(10 * time.Minute)
	r := held("bob")
	g, err := Live(ctx, api(&good, &r), "payments/sudo-x", during)
	require.NoError(t, err)
	assert.Equal(t, "payments/sudo-x", g.Ref())
	n := NoteOf(*g, true)
	assert.Equal(t, "Allowed until 2026-11-29T12:30:00Z by sudo grant payments/sudo-x (role edit) approved by bob.",
		n.String())
	revoked := good
	revoked.Status = &GrantStatus{RevokedBy: "erin"}
	for _, tt := range []struct {
		name string
		api  *objectsAPI
		ref  string
		at   time.Time
		want string
	}{
		{"not a ref", api(&good, &r), "sudo-x", during, `"sudo-x" names no sudo grant`},
		{"no such grant", api(nil, &r), "payments/sudo-x", during, "reading the grant payments/sudo-x: Error from server (NotFound)"},
		{"its request gone", api(&good, nil), "payments/sudo-x", during, "grant payments/sudo-x its request sudo-x does not exist"},
		{"expired", api(&good, &r), "payments/sudo-x", start.Add(30 * time.Minute), "grant payments/sudo-x expired at 2026-11-29T12:30:00Z"},
		{"revoked", api(&revoked, &r), "payments/sudo-x", during, "grant payments/sudo-x revoked by erin"},
		{"unreadable", &objectsAPI{fail: &kubeapi.APIError{Code: 403, Message: "forbidden"}}, "payments/sudo-x", during,
			"reading the grant payments/sudo-x: the server answered 403: forbidden"},
	} {
		_, err := Live(ctx, tt.api, tt.ref, tt.at)
		require.Error(t, err, tt.name)
		assert.Contains(t, err.Error(), tt.want, tt.name)
	}
	// The grant readable, its request not (a 500): an error, not "no request".
	f := api(&good, &r)
	calls := 0
	_, err = Live(ctx, &failSecond{objectsAPI: f, calls: &calls}, "payments/sudo-x", during)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "reading the request of grant payments/sudo-x")
}

// failSecond fails every GET after the first with a 500.
type failSecond struct {
	*objectsAPI
	calls *int
}

func (f *failSecond) Get(ctx context.Context, path string, out any) error {
	if *f.calls++; *f.calls > 1 {
		return &kubeapi.APIError{Code: 500, Message: "etcdserver: request timed out"}
	}
	return f.objectsAPI.Get(ctx, path, out)
}

// CleanText and the CRDs' TextPattern are one rule: the pattern admits a
// text exactly when it is not empty and cleaning leaves it as it is, over
// edge cases and 20,000 random texts of spaces, controls (C0, DEL, C1),
// other spaces and letters.
func TestCleanTextIsThePattern(t *testing.T) {
	re := regexp.MustCompile(TextPattern)
	admits := func(s string) bool { return s != "" && CleanText(s) == s }
	for _, s := range []string{"", " ", "a", " a", "a ", "a b", "INC-7 checkout down", "a\nb", "a\tb", "a\u0085b",
		"a\u00a0", "\u00a0a", "a\u007f", "a\u009f", "a\u00a0b", "\r", "a\r\n", "é", "a\u2028b", "INC-7 \u202edrowssap",
		"a\u2066b\u2069", "a\u2029", "\ufeffa"} {
		assert.Equal(t, admits(s), re.MatchString(s), "%q", s)
	}
	assert.Equal(t, "a b", CleanText(" a\nb\t"))
	assert.Equal(t, "INC-7  esrever", CleanText("INC-7 \u202eesrever\u202c"))
	assert.False(t, re.MatchString("INC-7 \u202eesrever"), "a bidirectional override is refused")
	// The CRDs hold it: a reason and a ticket, in requests and grants.
	crds, err := os.ReadFile("../../../deploy/sudo/crds.yaml")
	require.NoError(t, err)
	for _, field := range []string{"reason", "ticket"} {
		fields := regexp.MustCompile(`(?m)^ +`+field+`: \{type: string,.*$`).FindAllString(string(crds), -1)
		require.Len(t, fields, 2, "%s in SudoRequest and SudoGrant", field)
		for _, f := range fields {
			assert.Contains(t, f, "pattern: '"+TextPattern+"'", field)
		}
	}
	alphabet := []rune{' ', 'a', 'Z', '\n', '\t', '\r', '\x00', '\x1f', '\x7f', '\u0085', '\u009f', '\u00a0', '\u2028',
		'é', '\u3000', '\u202e', '\u2066', '\u200d', '\u2029', '\ufeff'}
	rng := rand.New(rand.NewPCG(58, 58))
	for range 20000 {
		r := make([]rune, rng.IntN(6))
		for i := range r {
			r[i] = alphabet[rng.IntN(len(alphabet))]
		}
		s := string(r)
		require.Equal(t, admits(s), re.MatchString(s), "%q", s)
	}
}
