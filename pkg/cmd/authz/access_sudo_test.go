package authz

import (
	"cmp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation/elevationtest"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/kubeapi"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbac"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/resource"
	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
)

// access asked under a sudo grant (sudo -- and sudo shell's kubeconfigs
// name it in the impersonation's extra) says until when and by whom, in the
// table and in -o json, for the grant's namespace only; a grant it cannot
// read or that does not count is said on stderr and the matrix stands.
func TestAccessUnderGrant(t *testing.T) {
	start := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
	ends := start.Add(30 * time.Minute).Format(time.RFC3339)
	old := start.Add(-time.Hour)
	req := elevation.Request{ObjectMeta: metav1.ObjectMeta{Name: "sudo-x", Namespace: "team-a", UID: types.UID("u-1")},
		Spec:   elevation.RequestSpec{Requester: "alice", Role: "edit", DurationSeconds: 1800, Reason: "INC-1"},
		Status: &elevation.RequestStatus{ApprovedBy: "bob"}}
	grant := elevation.Grant{ObjectMeta: metav1.ObjectMeta{Name: "sudo-x", Namespace: "team-a",
		CreationTimestamp: metav1.NewTime(start)},
		Spec: elevation.GrantSpec{Request: "sudo-x", RequestUID: "u-1", Requester: "alice", Role: "edit",
			DurationSeconds: 1800, Reason: "INC-1", Approver: "bob"}}
	api := func(g elevation.Grant) *elevationtest.API {
		return &elevationtest.API{Grants: []elevation.Grant{g}, Requests: []elevation.Request{req}}
	}
	expired := grant
	expired.CreationTimestamp = metav1.NewTime(old)
	until := "Allowed until " + ends + " by sudo grant team-a/sudo-x (role edit) approved by bob."
	for _, tt := range []struct {
		name, ref, ns, format string
		api                   *elevationtest.API
		want, notice          string
		asked                 int
		holder                string // the user the kubeconfig impersonates, alice when ""
	}{
		{"the table", "team-a/sudo-x", "team-a", "", api(grant), "# " + until, "", 2, ""},
		{"-o json", "team-a/sudo-x", "team-a", "json", api(grant),
			`"sudo":{"grant":"team-a/sudo-x","role":"edit","approver":"bob","ends":"` + ends + `","allows":true}`, "", 2, ""},
		{"no grant named: nothing read", "", "team-a", "", api(grant), "", "", 0, ""},
		{"another namespace's grant: nothing read", "team-b/sudo-x", "team-a", "", api(grant), "", "", 0, ""},
		{"expired", "team-a/sudo-x", "team-a", "", api(expired), "",
			"grant team-a/sudo-x expired at " + old.Add(30*time.Minute).Format(time.RFC3339), 2, ""},
		{"unreadable", "team-a/sudo-x", "team-a", "", &elevationtest.API{Fail: &kubeapi.APIError{Code: 403, Message: "no"}}, "",
			"which could not be read (reading the grant team-a/sudo-x: the server answered 403: no)", 1, ""},
		{name: "someone else's grant named", ref: "team-a/sudo-x", ns: "team-a", api: api(grant), holder: "mallory",
			notice: "(grant team-a/sudo-x is alice's, not mallory's)", asked: 2},
	} {
		streams, out, errOut := testStreams()
		f := newCluster(&fakeCluster{fakeIdentity: fakeIdentity{user: alice},
			fakeDiscovery:  fakeDiscovery{resources: []resource.Resource{pods}},
			fakeAuthorizer: fakeAuthorizer{allowed: map[string][]string{"pods": {"get"}}}})
		o := &AccessOptions{Verbs: []string{"get"}, Method: rbac.FromRules, Output: &cmdutil.OutputFlags{Format: tt.format},
			IOStreams: streams, global: testGlobal(), client: f, namespace: tt.ns,
			grant: tt.ref, grantUser: cmp.Or(tt.holder, "alice"), grants: tt.api}
		require.NoError(t, completeAndRun(o), tt.name)
		compact := strings.Join(strings.Fields(out.String()), "")
		if tt.want != "" {
			assert.Contains(t, out.String()+compact, tt.want, tt.name)
		} else {
			assert.NotContains(t, out.String(), "sudo", tt.name)
		}
		if tt.notice != "" {
			assert.Contains(t, errOut.String(), tt.notice, tt.name)
			assert.Equal(t, 1, strings.Count(errOut.String(), "\n"), "one line: %s", tt.name)
		} else {
			assert.Empty(t, errOut.String(), tt.name)
		}
		assert.Len(t, tt.api.Asked, tt.asked, "%s: %v", tt.name, tt.api.Asked)
	}
}
