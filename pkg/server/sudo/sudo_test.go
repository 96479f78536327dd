package sudo

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation"
)

var (
	start = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	alice = &user.DefaultInfo{Name: "alice", UID: "a-1", Groups: []string{"dev"},
		Extra: map[string][]string{"scopes": {"x"}}}
)

// pair is an approved request and its grant: alice holds edit in payments
// for 30 minutes from start, approved by bob.
func pair() (elevation.Grant, elevation.Request) {
	r := elevation.Request{ObjectMeta: metav1.ObjectMeta{Name: "sudo-x", Namespace: "payments", UID: types.UID("u-1")},
		Spec: elevation.RequestSpec{Requester: "alice", Role: "edit", DurationSeconds: 1800,
			Reason: "INC-1 checkout\ndown", Ticket: "INC-1"},
		Status: &elevation.RequestStatus{ApprovedBy: "bob"}}
	g := elevation.Grant{ObjectMeta: metav1.ObjectMeta{Name: "sudo-x", Namespace: "payments",
		CreationTimestamp: metav1.NewTime(start)},
		Spec: elevation.GrantSpec{Request: "sudo-x", RequestUID: "u-1", Requester: "alice", Role: "edit",
			DurationSeconds: 1800, Reason: r.Spec.Reason, Ticket: "INC-1", Approver: "bob"}}
	return g, r
}

// TestAsked: a sudo request is the caller impersonating itself with the
// grant extra, NAMESPACE/NAME, and nothing else.
func TestAsked(t *testing.T) {
	self := func(extra map[string][]string) *user.DefaultInfo {
		return &user.DefaultInfo{Name: "alice", Extra: extra}
	}
	grant := map[string][]string{GrantExtra: {"payments/sudo-x"}}
	for _, c := range []struct {
		name      string
		asked     user.Info
		ns, grant string
		err       string
	}{
		{"no grant extra: not sudo", &user.DefaultInfo{Name: "bob"}, "", "", ""},
		{"self with the grant", self(grant), "payments", "sudo-x", ""},
		{"self with own uid", &user.DefaultInfo{Name: "alice", UID: "a-1", Extra: grant}, "payments", "sudo-x", ""},
		{"another user", &user.DefaultInfo{Name: "bob", Extra: grant}, "", "", "impersonates its caller"},
		{"another uid", &user.DefaultInfo{Name: "alice", UID: "b-1", Extra: grant}, "", "", "own identity"},
		{"with a group", &user.DefaultInfo{Name: "alice", Groups: []string{"admins"}, Extra: grant}, "", "",
			"own identity"},
		{"with another extra", self(map[string][]string{GrantExtra: {"payments/sudo-x"}, "scopes": {"y"}}), "", "",
			"own identity"},
		{"two grants", self(map[string][]string{GrantExtra: {"payments/a", "payments/b"}}), "", "", "NAMESPACE/NAME"},
		{"no namespace", self(map[string][]string{GrantExtra: {"sudo-x"}}), "", "", "NAMESPACE/NAME"},
		{"empty name", self(map[string][]string{GrantExtra: {"payments/"}}), "", "", "NAMESPACE/NAME"},
		{"a path", self(map[string][]string{GrantExtra: {"payments/a/b"}}), "", "", "NAMESPACE/NAME"},
		{"empty", self(map[string][]string{GrantExtra: {""}}), "", "", "NAMESPACE/NAME"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns, name, err := Asked(c.asked, alice)
			if c.err != "" {
				require.ErrorIs(t, err, ErrRefused)
				assert.Contains(t, err.Error(), c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, []string{c.ns, c.grant}, []string{ns, name})
		})
	}
}

// TestReserved: no identity but an elevation's carries a sudo: group or a
// sudo extra, in any case or padding.
func TestReserved(t *testing.T) {
	for _, c := range []struct {
		name string
		u    user.Info
		bad  bool
	}{
		{"plain", alice, false},
		{"a group that merely mentions sudo", &user.DefaultInfo{Name: "a", Groups: []string{"pseudo:x", "x-sudo:y"}}, false},
		{"sudo group", &user.DefaultInfo{Name: "a", Groups: []string{"sudo:payments:edit"}}, true},
		{"sudo group in capitals", &user.DefaultInfo{Name: "a", Groups: []string{"SUDO:payments:edit"}}, true},
		{"sudo group padded", &user.DefaultInfo{Name: "a", Groups: []string{" sudo:payments:edit"}}, true},
		{"grant extra", &user.DefaultInfo{Name: "a", Extra: map[string][]string{GrantExtra: {"p/x"}}}, true},
		{"reason extra", &user.DefaultInfo{Name: "a", Extra: map[string][]string{ReasonExtra: {"x"}}}, true},
		{"via extra", &user.DefaultInfo{Name: "a", Extra: map[string][]string{ViaExtra: {"proxy"}}}, true},
		{"ticket extra in capitals", &user.DefaultInfo{Name: "a",
			Extra: map[string][]string{strings.ToUpper(TicketExtra): {"x"}}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.bad, Reserved(c.u) != "", Reserved(c.u))
		})
	}
}

// TestElevate: one table over every way a grant can fail to count, and
// the identity a counted one forwards.
func TestElevate(t *testing.T) {
	at := start.Add(10 * time.Minute)
	for _, c := range []struct {
		name    string
		edit    func(g *elevation.Grant, r *elevation.Request) *elevation.Request
		now     time.Time
		ns      string
		current bool
		err     string
	}{
		{"counts", nil, at, "payments", true, ""},
		{"no such grant here", nil, at, "checkout", true, "there is no sudo grant sudo-x in checkout"},
		{"someone else's", func(g *elevation.Grant, r *elevation.Request) *elevation.Request {
			g.Spec.Requester, r.Spec.Requester = "mallory", "mallory"
			return r
		}, at, "payments", true, "is mallory's, not yours"},
		{"at its end", nil, start.Add(30 * time.Minute), "payments", true,
			"grant payments/sudo-x expired at 2026-11-29T12:30:00Z"},
		{"revoked", func(g *elevation.Grant, r *elevation.Request) *elevation.Request {
			g.Status = &elevation.GrantStatus{RevokedBy: "bob"}
			return r
		}, at, "payments", true, "grant payments/sudo-x revoked by bob"},
		{"request gone", func(*elevation.Grant, *elevation.Request) *elevation.Request { return nil }, at, "payments",
			true, "does not count: its request sudo-x does not exist"},
		{"longer than asked", func(g *elevation.Grant, r *elevation.Request) *elevation.Request {
			g.Spec.DurationSeconds = 7200
			return r
		}, at, "payments", true, "does not copy its request"},
		{"another role than asked", func(g *elevation.Grant, r *elevation.Request) *elevation.Request {
			g.Spec.Role = "admin"
			return r
		}, at, "payments", true, "does not copy its request"},
		{"approver not the one who signed", func(g *elevation.Grant, r *elevation.Request) *elevation.Request {
			g.Spec.Approver = "mallory"
			return r
		}, at, "payments", true, "not approved by mallory"},
		{"not current", nil, at, "payments", false, "not current"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, r := pair()
			rp := &r
			if c.edit != nil {
				rp = c.edit(&g, &r)
			}
			s := NewStore()
			s.Now = func() time.Time { return c.now }
			var reqs []elevation.Request
			if rp != nil {
				reqs = append(reqs, *rp)
			}
			s.Load([]elevation.Grant{g}, reqs)
			if !c.current {
				s.Close("connection refused")
				s.Now = func() time.Time { return c.now.Add(DefaultGrace) }
			}
			e, err := s.Elevate(alice, c.ns, "sudo-x")
			if c.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.err)
				want := ErrRefused
				if !c.current {
					want = ErrNotCurrent
				}
				assert.ErrorIs(t, err, want)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, start.Add(30*time.Minute), e.Ends)
			assert.Equal(t, "alice", e.As.GetName())
			assert.Equal(t, "a-1", e.As.GetUID())
			assert.Equal(t, []string{"dev", "sudo:payments:edit"}, e.As.GetGroups())
			assert.Equal(t, map[string][]string{"scopes": {"x"}, GrantExtra: {"payments/sudo-x"}, ViaExtra: {"proxy"},
				ReasonExtra: {"INC-1 checkout down"}, TicketExtra: {"INC-1"}}, e.As.GetExtra(),
				"the reason as a header carries it: control characters as spaces")
			assert.Equal(t, []string{"dev"}, alice.Groups, "the caller is not changed")
		})
	}
}

// TestCurrent: the view is current once both watches listed and while
// they are open, or closed for less than Grace; never before a list, and
// not during a relist (a list, or a watch sending its initial events,
// replaces what the closed watch may have missed: a revocation); a late
// report of an older watch's end does not close the newer one.
func TestCurrent(t *testing.T) {
	now := start
	s := NewStore()
	s.Now = func() time.Time { return now }
	require.ErrorIs(t, s.Current(), ErrNotCurrent, "nothing listed")
	s.synced(grantFeed)
	g := s.opened(grantFeed)
	require.ErrorIs(t, s.Current(), ErrNotCurrent, "requests not listed")
	s.synced(requestFeed)
	require.ErrorIs(t, s.Current(), ErrNotCurrent, "listed, but no watch of requests opened yet")
	r := s.opened(requestFeed)
	require.NoError(t, s.Current())
	s.closed(grantFeed, g, "") // a watch ends, as every few minutes
	now = now.Add(DefaultGrace - time.Millisecond)
	require.NoError(t, s.Current(), "within the grace")
	now = now.Add(time.Millisecond)
	err := s.Current()
	require.ErrorIs(t, err, ErrNotCurrent)
	assert.Contains(t, err.Error(), "the watch of sudogrants closed")
	g2 := s.opened(grantFeed)
	require.NoError(t, s.Current(), "reopened")
	s.closed(grantFeed, g, "late") // the older watch's report, after the new one opened
	require.NoError(t, s.Current(), "a late report of an older watch is ignored")

	// A relist after a 410 (events lost): not current until its Replace,
	// though a watch (sending its initial events) is open.
	s.closed(requestFeed, r, "too old resource version")
	s.listing(requestFeed)
	s.opened(requestFeed)
	err = s.Current()
	require.ErrorIs(t, err, ErrNotCurrent)
	assert.Contains(t, err.Error(), "sudorequests has not listed yet")
	s.synced(requestFeed)
	require.NoError(t, s.Current())
	s.failed(grantFeed, "connection refused")
	now = now.Add(DefaultGrace)
	assert.ErrorContains(t, s.Current(), "connection refused")
	_ = g2
}

// TestSweep: while the view is not current every open stream is ended (a
// revocation may be unseen); a grant past its end ends its own.
func TestSweep(t *testing.T) {
	g, r := pair()
	now := start.Add(time.Minute)
	s := NewStore()
	s.Now = func() time.Time { return now }
	s.Load([]elevation.Grant{g}, []elevation.Request{r})
	e, err := s.Elevate(alice, "payments", "sudo-x")
	require.NoError(t, err)
	s.Sweep()
	require.False(t, e.Over(now), "current, counting: kept")
	now = g.Ends()
	s.Sweep()
	require.True(t, e.Over(now.Add(-time.Second)), "past its end: its channel closed")

	s = NewStore()
	now = start.Add(time.Minute)
	s.Now = func() time.Time { return now }
	s.Load([]elevation.Grant{g}, []elevation.Request{r})
	e, err = s.Elevate(alice, "payments", "sudo-x")
	require.NoError(t, err)
	s.Close("connection reset")
	s.Sweep()
	require.False(t, e.Over(now), "within the grace: kept")
	now = now.Add(DefaultGrace)
	s.Sweep()
	require.True(t, e.Over(start.Add(time.Minute)), "not current past the grace: ended")
}

// TestRevokedClosesStreams: a stream's channel closes when its grant is
// revoked, deleted, or its request goes; not on an unrelated change.
func TestRevokedClosesStreams(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(s *Store, g elevation.Grant)
		closed bool
	}{
		{"another grant changes", func(s *Store, g elevation.Grant) {
			g.Name = "other"
			s.setGrant(elevation.Ref(g.Namespace, "other"), &g)
		}, false},
		{"revoked", func(s *Store, g elevation.Grant) {
			g.Status = &elevation.GrantStatus{RevokedBy: "bob"}
			s.setGrant(elevation.Ref(g.Namespace, g.Name), &g)
		}, true},
		{"deleted", func(s *Store, g elevation.Grant) { s.setGrant(elevation.Ref(g.Namespace, g.Name), nil) }, true},
		{"request deleted", func(s *Store, g elevation.Grant) { s.setRequest(elevation.Ref(g.Namespace, g.Name), nil) }, true},
		{"relisted without it", func(s *Store, _ elevation.Grant) {
			s.replaceGrants(map[string]elevation.Grant{})
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, r := pair()
			s := NewStore()
			s.Now = func() time.Time { return start.Add(time.Minute) }
			s.Load([]elevation.Grant{g}, []elevation.Request{r})
			e, err := s.Elevate(alice, "payments", "sudo-x")
			require.NoError(t, err)
			c.change(s, g)
			select {
			case <-e.Revoked:
				assert.True(t, c.closed, "closed")
				assert.True(t, e.Over(start.Add(time.Minute)))
			default:
				assert.False(t, c.closed, "still open")
				assert.False(t, e.Over(start.Add(time.Minute)))
			}
		})
	}
}

// TestClampTokenRequest: a service-account token asked under a grant ends
// by the grant's end, in JSON and protobuf; never 3607 s (which
// kube-apiserver extends to a year for a Pod-bound token); refused when
// less than the 10-minute minimum is left.
func TestClampTokenRequest(t *testing.T) {
	ends := start.Add(30 * time.Minute)
	sec := func(n int64) *int64 { return &n }
	for _, c := range []struct {
		name  string
		asked *int64
		now   time.Time
		want  int64
		err   string
	}{
		{"the default hour, clamped", nil, start, 1800, ""},
		{"shorter than left, kept", sec(900), start, 900, ""},
		{"a day, clamped", sec(86400), start, 1800, ""},
		{"3607 never", sec(3607), start.Add(-2 * time.Hour), 3606, ""},
		{"clamped to 3607 never", sec(86400), ends.Add(-3607 * time.Second), 3606, ""},
		{"under the minimum left", nil, ends.Add(-599 * time.Second), 0, "in 599s"},
		{"grant over", sec(600), ends.Add(time.Second), 0, "in 0s"},
	} {
		for _, ct := range []string{"application/json", "application/vnd.kubernetes.protobuf"} {
			t.Run(c.name+" "+ct, func(t *testing.T) {
				info, ok := runtime.SerializerInfoForMediaType(tokenCodecs.SupportedMediaTypes(), ct)
				require.True(t, ok)
				in := authnv1.TokenRequest{TypeMeta: metav1.TypeMeta{APIVersion: "authentication.k8s.io/v1",
					Kind: "TokenRequest"}, Spec: authnv1.TokenRequestSpec{Audiences: []string{"api"},
					ExpirationSeconds: c.asked, BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", Name: "p"}}}
				var body bytes.Buffer
				require.NoError(t, info.Serializer.Encode(&in, &body))
				r, _ := http.NewRequest(http.MethodPost, "/api/v1/namespaces/payments/serviceaccounts/x/token", &body)
				r.Header.Set("Content-Type", ct)
				err := ClampTokenRequest(r, ends, c.now)
				if c.err != "" {
					require.ErrorIs(t, err, ErrRefused)
					assert.Contains(t, err.Error(), c.err)
					return
				}
				require.NoError(t, err)
				b, _ := io.ReadAll(r.Body)
				assert.Equal(t, int64(len(b)), r.ContentLength)
				var out authnv1.TokenRequest
				_, _, err = info.Serializer.Decode(b, nil, &out)
				require.NoError(t, err)
				require.NotNil(t, out.Spec.ExpirationSeconds)
				assert.Equal(t, c.want, *out.Spec.ExpirationSeconds)
				assert.Equal(t, []string{"api"}, out.Spec.Audiences, "the rest unchanged")
				assert.Equal(t, "p", out.Spec.BoundObjectRef.Name)
			})
		}
	}
	for name, body := range map[string]string{"not JSON": "{", "too large": `{"a":"` + strings.Repeat("x", 1<<20) + `"}`} {
		r, _ := http.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		assert.ErrorIs(t, ClampTokenRequest(r, ends, start), ErrRefused, name)
	}
	r, _ := http.NewRequest(http.MethodPost, "/", strings.NewReader("x: 1"))
	r.Header.Set("Content-Type", "text/plain")
	err := ClampTokenRequest(r, ends, start)
	assert.True(t, errors.Is(err, ErrRefused) && strings.Contains(err.Error(), "text/plain"), err)
}
