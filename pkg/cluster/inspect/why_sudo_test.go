package inspect

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation/elevationtest"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbaceval"
)

// why says "allowed until T by grant G approved by bob" when the grant's
// group, which the identity carries, is among the bindings that allow; it
// names a live grant that does not allow; nothing for ended or others'
// grants, or where grants cannot be read.
func TestSudoNotes(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	grant := func(name, requester string, start time.Time) (elevation.Grant, elevation.Request) {
		r := elevation.Request{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "payments", UID: types.UID("u-" + name)},
			Spec:   elevation.RequestSpec{Requester: requester, Role: "edit", DurationSeconds: 1800, Reason: "r"},
			Status: &elevation.RequestStatus{ApprovedBy: "bob"}}
		return elevation.Grant{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "payments", CreationTimestamp: metav1.NewTime(start)},
			Spec: elevation.GrantSpec{Request: name, RequestUID: string(r.UID), Requester: requester, Role: "edit",
				DurationSeconds: 1800, Reason: "r", Approver: "bob"}}, r
	}
	live, liveReq := grant("sudo-live", "alice", now.Add(-time.Minute))
	ended, endedReq := grant("sudo-ended", "alice", now.Add(-time.Hour))
	other, otherReq := grant("sudo-other", "mallory", now.Add(-time.Minute))
	api := &elevationtest.API{Grants: []elevation.Grant{live, ended, other},
		Requests: []elevation.Request{liveReq, endedReq, otherReq}}
	byGroup := rbaceval.Grant{Binding: "sudo-edit", Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind,
		Name: "sudo:payments:edit"}}}
	for _, c := range []struct {
		name string
		res  WhyResult
		api  *elevationtest.API
		want []elevation.Note
	}{
		{"allowed through the grant's group", WhyResult{Allowed: true, Username: "alice",
			Groups: []string{"dev", "sudo:payments:edit"}, Grants: []rbaceval.Grant{byGroup}}, api,
			[]elevation.Note{{Grant: "payments/sudo-live", Role: "edit", Approver: "bob", Ends: now.Add(29 * time.Minute),
				Allows: true}}},
		{"held, not carried", WhyResult{Allowed: false, Username: "alice", Groups: []string{"dev"}}, api,
			[]elevation.Note{{Grant: "payments/sudo-live", Role: "edit", Approver: "bob", Ends: now.Add(29 * time.Minute)}}},
		{"allowed by another binding", WhyResult{Allowed: true, Username: "alice",
			Groups: []string{"sudo:payments:edit"}, Grants: []rbaceval.Grant{{Binding: "x",
				Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "alice"}}}}}, api,
			[]elevation.Note{{Grant: "payments/sudo-live", Role: "edit", Approver: "bob", Ends: now.Add(29 * time.Minute)}}},
		{"allowed carrying the group, bindings unreadable", WhyResult{Allowed: true, Username: "alice",
			Groups: []string{"sudo:payments:edit"}, RBACNote: "you may not read RBAC objects here"}, api,
			[]elevation.Note{{Grant: "payments/sudo-live", Role: "edit", Approver: "bob", Ends: now.Add(29 * time.Minute),
				Allows: true}}},
		{"no grant of bob's", WhyResult{Username: "bob"}, api, nil},
		{"grants unreadable", WhyResult{Username: "alice"}, &elevationtest.API{Fail: errors.New("404")}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, sudoNotes(context.Background(), c.api, "payments", &c.res, now))
		})
	}
}
