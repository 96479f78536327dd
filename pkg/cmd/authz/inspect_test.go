package authz

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/inspect"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/kubeapi"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbac"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbaceval"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/resource"
	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
)

// without is asked without the entries equal to drop.
func without(asked []string, drop string) []string {
	return slices.DeleteFunc(slices.Clone(asked), func(a string) bool { return a == drop })
}

func testStreams() (genericiooptions.IOStreams, *strings.Builder, *strings.Builder) {
	var out, errOut strings.Builder
	return genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, &out, &errOut
}

func testGlobal() *cmdutil.GlobalOptions {
	return &cmdutil.GlobalOptions{Getenv: func(string) string { return "" },
		IsTerminal: func(any) bool { return false }}
}

var (
	alice = authnv1.UserInfo{Username: "alice@example.com", Groups: []string{"dev", "system:authenticated"}}
	pods  = resource.Resource{Version: "v1", Name: "pods", Namespaced: true, Verbs: []string{"get", "list"},
		Kind: "Pod", SingularName: "pod", ShortNames: []string{"po"}}
	secrets  = resource.Resource{Version: "v1", Name: "secrets", Namespaced: true, Verbs: []string{"get", "list"}}
	devGrant = &rbaceval.RBAC{
		Roles: map[string][]rbacv1.PolicyRule{"team-a/pod-reader": {{APIGroups: []string{""},
			Resources: []string{"pods"}, Verbs: []string{"get"}}}},
		RoleBindings: []rbacv1.RoleBinding{{ObjectMeta: metav1.ObjectMeta{Name: "devs-read-pods", Namespace: "team-a"},
			RoleRef:  rbacv1.RoleRef{Kind: "Role", Name: "pod-reader"},
			Subjects: []rbacv1.Subject{{Kind: "Group", Name: "dev"}}}},
	}
)

func TestWhyRun(t *testing.T) {
	for _, tt := range []struct {
		name     string
		args     []string
		quiet    bool
		why      authzv1.SubjectAccessReviewStatus
		rbac     *rbaceval.RBAC
		rbacErr  error
		whyVerbs map[string]bool
		want     []string
		wantErr  string
		wantCode int
		asked    []string
	}{
		{name: "allowed, the binding named", args: []string{"get", "pods"},
			why: authzv1.SubjectAccessReviewStatus{Allowed: true,
				Reason: `RBAC: allowed by RoleBinding "devs-read-pods/team-a"`},
			rbac: devGrant,
			want: []string{"alice@example.com: may get pods in namespace team-a? yes", "Reason: RBAC: allowed by",
				"RoleBinding/devs-read-pods  team-a"}},
		{name: "a short name, resolved by discovery", args: []string{"get", "po"},
			why: authzv1.SubjectAccessReviewStatus{Allowed: true}, rbac: devGrant,
			want: []string{"may get pods in namespace team-a? yes", "RoleBinding/devs-read-pods"}},
		{name: "a kind, resolved", args: []string{"get", "Pod"}, why: authzv1.SubjectAccessReviewStatus{Allowed: true},
			rbac: devGrant,
			want: []string{"may get pods in namespace team-a? yes"}},
		{name: "denied: exit code 1, as kubectl auth can-i", args: []string{"get", "pods"},
			why: authzv1.SubjectAccessReviewStatus{}, rbac: &rbaceval.RBAC{},
			want: []string{"may get pods in namespace team-a? no"}, wantCode: 1},
		{name: "-q, allowed: nothing printed, nothing more asked", args: []string{"get", "pods"}, quiet: true,
			why:   authzv1.SubjectAccessReviewStatus{Allowed: true},
			asked: []string{"Why get pods team-a"}},
		{name: "-q, denied: exit code 1 alone", args: []string{"get", "pods"}, quiet: true, wantCode: 1,
			asked: []string{"Why get pods team-a"}},
		{name: "an unknown resource: a warning naming the closest, asked as typed", args: []string{"get", "podz"},
			rbac:    &rbaceval.RBAC{},
			want:    []string{"may get podz in namespace team-a? no"},
			wantErr: `the server does not serve a resource "podz" (did you mean "pods"?)`, wantCode: 1,
			asked: []string{"Why get podz team-a", "ReadRBAC team-a"}},
		{name: "kubectl exec needs get and create (1.35+): create alone", args: []string{"create", "pods/exec"},
			rbac:     &rbaceval.RBAC{},
			whyVerbs: map[string]bool{"create": true},
			want: []string{"may create pods/exec in namespace team-a? yes",
				"kubectl exec: fails (since Kubernetes 1.35 it needs get and create on pods/exec over WebSockets: get no, create yes)"},
			asked: []string{"Why create pods team-a", "Why get pods team-a", "ReadRBAC team-a"}},
		{name: "kubectl port-forward with both verbs", args: []string{"get", "pods/portforward"}, rbac: &rbaceval.RBAC{},
			whyVerbs: map[string]bool{"create": true, "get": true}, want: []string{"kubectl port-forward: works"},
			asked: []string{"Why get pods team-a", "Why create pods team-a", "ReadRBAC team-a"}},
		{name: "an escalation verb, said so", args: []string{"impersonate", "users", "bob"},
			why: authzv1.SubjectAccessReviewStatus{Allowed: true}, rbac: &rbaceval.RBAC{},
			want: []string{"may impersonate users bob at cluster scope? yes",
				"This is an escalation path: impersonating acts with the permissions"},
			asked: []string{"Why impersonate users ", "ReadRBAC team-a"}},
		{name: "impersonate-on also asks the mode's identity check",
			args: []string{"impersonate-on:user-info:list", "pods"}, rbac: &rbaceval.RBAC{},
			whyVerbs: map[string]bool{"impersonate-on:user-info:list": true},
			want: []string{"? yes", "constrained impersonation",
				"Constrained impersonation path: fails (impersonate:user-info users.authentication.k8s.io, any name: no; impersonate-on:user-info:list: yes)"},
			asked: []string{"Why impersonate-on:user-info:list pods team-a", "Why impersonate:user-info users ",
				"ReadRBAC team-a"}},
		{name: "the serviceaccount mode's identity check is the namespace's",
			args: []string{"impersonate-on:serviceaccount:get", "pods"}, rbac: &rbaceval.RBAC{},
			whyVerbs: map[string]bool{"impersonate-on:serviceaccount:get": true, "impersonate:serviceaccount": true},
			want:     []string{"Constrained impersonation path: works"},
			asked: []string{"Why impersonate-on:serviceaccount:get pods team-a",
				"Why impersonate:serviceaccount serviceaccounts team-a", "ReadRBAC team-a"}},
		{name: "RBAC grants it, the chain denies it: decided elsewhere", args: []string{"get", "pods"},
			why:  authzv1.SubjectAccessReviewStatus{Denied: true, Reason: "webhook: no"},
			rbac: devGrant, wantCode: 1,
			want: []string{"? no", "Reason: webhook: no",
				"another authorizer of the chain (such as a webhook) denied it", "RoleBinding/devs-read-pods"}},
		{name: "no binding, yet allowed: decided elsewhere", args: []string{"get", "pods"},
			why:  authzv1.SubjectAccessReviewStatus{Allowed: true},
			rbac: &rbaceval.RBAC{}, want: []string{"? yes", "No RBAC binding grants it to you: another authorizer"}},
		{name: "RBAC unreadable", args: []string{"get", "pods"}, why: authzv1.SubjectAccessReviewStatus{Allowed: true},
			rbacErr: &kubeapi.APIError{Code: 403},
			want:    []string{"? yes", "you may not read RBAC objects here"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			streams, out, errOut := testStreams()
			f := newCluster(&fakeCluster{fakeIdentity: fakeIdentity{user: alice},
				fakeDiscovery:  fakeDiscovery{resources: []resource.Resource{pods, secrets}},
				fakeObjects:    fakeObjects{rbac: tt.rbac, rbacErr: tt.rbacErr},
				fakeAuthorizer: fakeAuthorizer{why: tt.why, whyVerbs: tt.whyVerbs}})
			o := &WhyOptions{Output: &cmdutil.OutputFlags{Format: ""}, Quiet: tt.quiet, IOStreams: streams,
				global: testGlobal(), client: f,
				target: parseTarget(tt.args, "team-a")}
			err := completeAndRun(o)
			if tt.wantCode == 0 {
				require.NoError(t, err)
			} else {
				assert.Equal(t, cmdutil.ExitCode(tt.wantCode), err)
			}
			for _, w := range tt.want {
				assert.Contains(t, out.String(), w)
			}
			if tt.quiet {
				assert.Empty(t, out.String())
			}
			if tt.wantErr != "" {
				assert.Contains(t, errOut.String(), tt.wantErr)
			} else {
				assert.Empty(t, errOut.String())
			}
			asked := tt.asked
			if asked == nil {
				asked = []string{"Why get pods team-a", "ReadRBAC team-a"}
			}
			assert.Equal(t, asked, f.asked)
		})
	}
	t.Run("RBAC unreadable otherwise: the decision stands, said so", func(t *testing.T) {
		streams, out, _ := testStreams()
		o := &WhyOptions{Output: &cmdutil.OutputFlags{}, IOStreams: streams, global: testGlobal(),
			target: parseTarget([]string{"get", "pods"}, "x"),
			client: newCluster(&fakeCluster{fakeIdentity: fakeIdentity{user: alice},
				fakeObjects:    fakeObjects{rbacErr: errors.New("connection refused")},
				fakeAuthorizer: fakeAuthorizer{why: authzv1.SubjectAccessReviewStatus{Allowed: true}}})}
		require.NoError(t, completeAndRun(o))
		assert.Contains(t, out.String(), "? yes")
		assert.Contains(t, out.String(), "could not read RBAC objects (connection refused)")
	})
}

func TestWhoCanRun(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "pods"}, "RoleBinding/devs-read-pods  team-a     Role/pod-reader  Group:dev"},
		{[]string{"get", "po"}, "RoleBinding/devs-read-pods  team-a     Role/pod-reader  Group:dev"},
		{[]string{"delete", "pods"}, "No binding grants delete pods in namespace team-a."},
	} {
		streams, out, _ := testStreams()
		f := newCluster(&fakeCluster{fakeDiscovery: fakeDiscovery{resources: []resource.Resource{pods}},
			fakeObjects: fakeObjects{rbac: devGrant}})
		o := &WhoCanOptions{Output: &cmdutil.OutputFlags{}, IOStreams: streams, global: testGlobal(), client: f,
			target: parseTarget(tt.args, "team-a")}
		require.NoError(t, completeAndRun(o))
		assert.Contains(t, out.String(), tt.want)
		assert.Contains(t, out.String(), "These are the RBAC bindings only", "said in the output, not only in --help")
		assert.Equal(t, []string{"ReadRBAC team-a"}, f.asked)
	}
}

func TestAccessRun(t *testing.T) {
	newOpts := func(f *fakeCluster, impersonated *[]string) (*AccessOptions, *strings.Builder) {
		streams, out, _ := testStreams()
		return &AccessOptions{Verbs: []string{"get", "list"}, Method: rbac.FromRules, RBACObjects: true,
			Output: &cmdutil.OutputFlags{Format: "json"}, IOStreams: streams,
			global: testGlobal(), client: f, namespace: "team-a",
			impersonate: func(user string, groups []string, _ string, _ map[string][]string) (inspect.AccessClient,
				error) {
				*impersonated = append(*impersonated, cmdutil.DescribeIdentity(user, groups))
				return newCluster(&fakeCluster{fakeAuthorizer: fakeAuthorizer{allowed: map[string][]string{"pods": {"get"}, "secrets": {"get"}}}}), nil
			}}, out
	}
	cluster := func() *fakeCluster {
		return newCluster(&fakeCluster{fakeIdentity: fakeIdentity{user: alice},
			fakeDiscovery:  fakeDiscovery{resources: []resource.Resource{pods, secrets}},
			fakeObjects:    fakeObjects{namespaces: []string{"a", "b"}},
			fakeAuthorizer: fakeAuthorizer{allowed: map[string][]string{"pods": {"get", "list"}, "secrets": {"get"}}}})
	}
	t.Run("one namespace", func(t *testing.T) {
		var imp []string
		f := cluster()
		o, out := newOpts(f, &imp)
		require.NoError(t, completeAndRun(o))
		var m rbac.Matrix
		require.NoError(t, json.Unmarshal([]byte(out.String()), &m))
		assert.Equal(t, "team-a", m.Namespace)
		require.Len(t, m.Rows, 2)
		assert.True(t, m.Rows[0].Cells["list"].Allowed)
		assert.False(t, m.Rows[1].Cells["list"].Allowed)
		assert.Equal(t, []string{"Access team-a"}, f.asked)
		assert.Empty(t, imp)
	})
	t.Run("-A: one matrix per namespace", func(t *testing.T) {
		var imp []string
		f := cluster()
		o, out := newOpts(f, &imp)
		o.AllNamespaces = true
		require.NoError(t, completeAndRun(o))
		var ms []rbac.Matrix
		require.NoError(t, json.Unmarshal([]byte(out.String()), &ms))
		assert.Len(t, ms, 2)
		// The objects are read in the review's round trip, for nothing here.
		assert.Equal(t, []string{"RulesReview", "Access a", "Access b"}, without(f.asked, "ReadRBAC "),
			"an incomplete review (a webhook): one rules review per namespace")
	})
	t.Run("escalation: the cluster's checks once per run, the paths held in the table", func(t *testing.T) {
		var imp []string
		f := cluster()
		f.escalation = []rbac.EscalationCell{
			{Verb: "impersonate", Resource: "users", Cell: rbac.Cell{Allowed: true, Source: rbac.FromAccessReview}},
			{Verb: "bind", Resource: "clusterroles.rbac.authorization.k8s.io", Cell: rbac.Cell{Source: rbac.FromRules}},
		}
		o, out := newOpts(f, &imp)
		o.AllNamespaces, o.Escalation, o.Output.Format = true, true, ""
		require.NoError(t, completeAndRun(o))
		assert.Equal(t, []string{"RulesReview", "Access a", "cluster escalation", "Access b"},
			without(f.asked, "ReadRBAC "))
		assert.Contains(t, out.String(), "# escalation paths: 1 of the 2 checks allowed")
		assert.Regexp(t, `impersonate +users +cluster +✔\*`, out.String())
		assert.NotContains(t, out.String(), "bind ", "only the paths held are in the table")
	})
	t.Run("-A --as: the namespaces listed with the caller's own rights", func(t *testing.T) {
		var imp []string
		f := cluster()
		f.namespaces = nil // the impersonated identity may not list them
		o, out := newOpts(f, &imp)
		o.AllNamespaces = true
		o.caller = newCluster(&fakeCluster{fakeObjects: fakeObjects{namespaces: []string{"a", "b"}}})
		require.NoError(t, completeAndRun(o))
		var ms []rbac.Matrix
		require.NoError(t, json.Unmarshal([]byte(out.String()), &ms))
		assert.Len(t, ms, 2)
		assert.Equal(t, []string{"RulesReview", "Access a", "Access b"}, f.asked,
			"the matrices are the impersonated identity's")
	})
	t.Run("-A --as: the RBAC objects read once by the caller, evaluated for the identity", func(t *testing.T) {
		var imp []string
		f := cluster()
		podsRule := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
		f.reviewRules = []authzv1.ResourceRule{{Verbs: []string{"get"}, APIGroups: []string{""},
			Resources: []string{"pods"}}}
		o, _ := newOpts(f, &imp)
		o.AllNamespaces = true
		caller := newCluster(&fakeCluster{fakeObjects: fakeObjects{namespaces: []string{"a", "b"}, rbac: &rbaceval.RBAC{
			Roles:        map[string][]rbacv1.PolicyRule{"a/reader": {podsRule}},
			ClusterRoles: map[string][]rbacv1.PolicyRule{},
			RoleBindings: []rbacv1.RoleBinding{{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "a"},
				RoleRef:  rbacv1.RoleRef{Kind: "Role", Name: "reader"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: alice.Username}}}},
		}}})
		o.caller = caller
		require.NoError(t, completeAndRun(o))
		assert.Equal(t, []string{"RulesReview", "Access a from 1 local rules", "Access b from 0 local rules"}, f.asked)
		assert.Equal(t, []string{"ReadRBAC "}, caller.asked, "read once, with the caller's rights")

		// Objects that do not give the server's rules: per namespace, said.
		f = cluster()
		f.reviewRules = []authzv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"},
			Resources: []string{"*"}}}
		o, _ = newOpts(f, &imp)
		o.AllNamespaces, o.caller = true, caller
		errOut := &strings.Builder{}
		o.ErrOut = errOut
		require.NoError(t, completeAndRun(o))
		assert.Equal(t, []string{"RulesReview", "Access a", "Access b"}, f.asked)
		assert.Contains(t, errOut.String(),
			"the RBAC objects do not give the rules the server reviews in a: one rules review per namespace")
	})
	t.Run("--diff-as: only the differing cells, the other identity impersonated", func(t *testing.T) {
		var imp []string
		o, out := newOpts(cluster(), &imp)
		o.DiffAs, o.DiffAsGroups = "bob", []string{"ops"}
		require.NoError(t, completeAndRun(o))
		assert.Equal(t, []string{"bob [ops]"}, imp)
		var m rbac.Matrix
		require.NoError(t, json.Unmarshal([]byte(out.String()), &m))
		require.Len(t, m.Rows, 1, "secrets: the same for both")
		assert.Equal(t, "pods", m.Rows[0].Resource)
		assert.Equal(t, rbac.NotApplicable, m.Rows[0].Cells["get"].Source, "pods/get: the same for both")
		assert.NotEqual(t, rbac.NotApplicable, m.Rows[0].Cells["list"].Source, "pods/list differs")
	})
	t.Run("--token-identity: the server's view of the caller, impersonated", func(t *testing.T) {
		var imp []string
		o, _ := newOpts(cluster(), &imp)
		o.TokenIdentity = true
		require.NoError(t, completeAndRun(o))
		assert.Equal(t, []string{"alice@example.com [dev,system:authenticated]"}, imp)
	})
}

func TestListRun(t *testing.T) {
	streams, out, errOut := testStreams()
	f := newCluster(&fakeCluster{fakeIdentity: fakeIdentity{user: alice},
		fakeDiscovery: fakeDiscovery{resources: []resource.Resource{pods}},
		fakeObjects: fakeObjects{objects: []resource.Object{
			{Namespace: "team-a", Name: "alice@example.com-web"}, {Namespace: "team-a", Name: "other"},
			{Namespace: "team-b", Name: "alice@example.com-db"}}}})
	o := &ListOptions{Resource: "po", Verbs: []string{"get"}, Method: rbac.FromRules,
		Output: &cmdutil.OutputFlags{Format: ""}, IOStreams: streams,
		global: testGlobal(), caller: f, target: f, identity: "you", namespace: "team-a", now: time.Now}
	require.NoError(t, completeAndRun(o))
	assert.Equal(t, []string{"List team-a", "Filter"}, f.asked)
	assert.Contains(t, out.String(), "alice@example.com-web")
	assert.NotContains(t, out.String(), "other")
	assert.NotContains(t, out.String(), "alice@example.com-db", "another namespace")
	assert.Empty(t, errOut.String())

	// -A: the RBAC objects read once (with the caller's rights) and
	// evaluated for every namespace, when a rules review as the target
	// gives the same rules; otherwise a rules review per namespace.
	podsGet := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}
	snapshot := &rbaceval.RBAC{ClusterRoles: map[string][]rbacv1.PolicyRule{"reader": {podsGet}},
		RoleBindings: []rbacv1.RoleBinding{{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a"},
			RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "reader"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "dev"}}}}}
	served := []authzv1.ResourceRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}}
	for _, tc := range []struct {
		name        string
		reviewRules []authzv1.ResourceRule
		rbacObjects bool
		rbacErr     error
		// The caller (an admin) lists and reads RBAC; the target (alice,
		// --as) is reviewed and filtered.
		wantCaller, wantTarget []string
		wantKept               []string
		wantErr                string
		// targetUser replaces alice.
		targetUser *authnv1.UserInfo
		verbose    bool
	}{
		{name: "system:masters: every object, whatever the review and the objects say (kube-apiserver allows it all first)", rbacObjects: true, rbacErr: errors.New("forbidden"),
			targetUser: &authnv1.UserInfo{Username: "root", Groups: []string{"system:masters", "system:authenticated"}},
			wantCaller: []string{"List ", "ReadRBAC "}, wantTarget: []string{"RulesReview", "Filter from local rules"},
			wantKept: []string{"team-a/web", "team-b/alice@example.com-db"}},
		{name: "the RBAC objects give the server's rules", reviewRules: served, rbacObjects: true,
			wantCaller: []string{"List ", "ReadRBAC "}, wantTarget: []string{"RulesReview", "Filter from local rules"},
			wantKept: []string{"team-a/web"}},
		{name: "--rbac-objects=false", reviewRules: served,
			wantCaller: []string{"List "}, wantTarget: []string{"Filter"},
			wantKept: []string{"team-b/alice@example.com-db"}},
		{name: "another authorizer in the chain (incomplete review)", rbacObjects: true,
			wantCaller: []string{"List ", "ReadRBAC "}, wantTarget: []string{"RulesReview", "Filter"},
			wantKept: []string{"team-b/alice@example.com-db"}},
		{name: "the RBAC objects differ from the server's rules",
			reviewRules: append(slices.Clone(served),
				authzv1.ResourceRule{Verbs: []string{"list"}, Resources: []string{"pods"}}), rbacObjects: true,
			wantCaller: []string{"List ", "ReadRBAC "}, wantTarget: []string{"RulesReview", "Filter"},
			wantKept: []string{"team-b/alice@example.com-db"},
			wantErr:  "do not give the rules the server reviews in team-a: one rules review per namespace"},
		{name: "the RBAC objects cannot be read", reviewRules: served, rbacObjects: true,
			rbacErr:    errors.New("connection reset"),
			wantCaller: []string{"List ", "ReadRBAC "}, wantTarget: []string{"RulesReview", "Filter"},
			wantKept: []string{"team-b/alice@example.com-db"},
			wantErr:  "the RBAC objects cannot be read (connection reset): one rules review per namespace"},
		{name: "the caller may not read RBAC (a project's admin): the same answers, no line", reviewRules: served,
			rbacObjects: true,
			rbacErr: fmt.Errorf("reading RBAC: %w",
				&kubeapi.APIError{Code: 403, Reason: "Forbidden", Message: "rolebindings is forbidden"}),
			wantCaller: []string{"List ", "ReadRBAC "}, wantTarget: []string{"RulesReview", "Filter"},
			wantKept: []string{"team-b/alice@example.com-db"}},
		{name: "the caller may not read RBAC, -v=1: said", reviewRules: served, rbacObjects: true, verbose: true,
			rbacErr: fmt.Errorf("reading RBAC: %w",
				&kubeapi.APIError{Code: 403, Reason: "Forbidden", Message: "rolebindings is forbidden"}),
			wantCaller: []string{"List ", "ReadRBAC "}, wantTarget: []string{"RulesReview", "Filter"},
			wantKept: []string{"team-b/alice@example.com-db"},
			wantErr:  "the RBAC objects cannot be read (reading RBAC: Error from server (Forbidden): rolebindings is forbidden): one rules review per namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			streams, out, errOut := testStreams()
			caller := newCluster(&fakeCluster{fakeIdentity: fakeIdentity{user: authnv1.UserInfo{Username: "admin"}},
				fakeDiscovery: fakeDiscovery{resources: []resource.Resource{pods}},
				fakeObjects: fakeObjects{rbac: snapshot, rbacErr: tc.rbacErr,
					objects: []resource.Object{{Namespace: "team-a", Name: "web"},
						{Namespace: "team-b", Name: "alice@example.com-db"}}}})
			target := newCluster(&fakeCluster{fakeIdentity: fakeIdentity{user: alice},
				fakeAuthorizer: fakeAuthorizer{reviewRules: tc.reviewRules}})
			if tc.targetUser != nil {
				target.user = *tc.targetUser
			}
			global := testGlobal()
			if tc.verbose {
				global.Verbosity = 1
			}
			o := &ListOptions{Resource: "po", Verbs: []string{"get"}, Method: rbac.FromRules, AllNamespaces: true,
				RBACObjects: tc.rbacObjects,
				Output:      &cmdutil.OutputFlags{Format: ""}, IOStreams: streams, global: global, caller: caller,
				target: target, identity: "alice", now: time.Now}
			require.NoError(t, completeAndRun(o))
			assert.Equal(t, tc.wantCaller, caller.asked, "the caller's requests")
			assert.Equal(t, tc.wantTarget, target.asked, "the reviewed identity's requests")
			var kept []string
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n")[1:] {
				f := strings.Fields(line)
				kept = append(kept, f[0]+"/"+f[1])
			}
			assert.Equal(t, tc.wantKept, kept)
			if tc.wantErr == "" {
				assert.Empty(t, errOut.String())
			} else {
				assert.Contains(t, errOut.String(), tc.wantErr)
			}
		})
	}
}

// TestWhoCanVerify: --verify asks the chain about each subject listed
// (once each), and reports the ones another authorizer denies, in the
// table and under deniedBySubject in -o json.
func TestWhoCanVerify(t *testing.T) {
	for _, tt := range []struct {
		name   string
		deny   map[string]string
		format string
		allNS  bool
		want   string
	}{
		{name: "all confirmed", want: "Verified: the authorizer chain allows every subject listed"},
		{name: "-A: a RoleBinding's subjects asked in its namespace", allNS: true,
			want: "Verified: the authorizer chain allows every subject listed"},
		{name: "a webhook denies the group",
			deny: map[string]string{"Group:dev": "webhook: no pods for dev on Fridays"},
			want: "DENIES these subjects although RBAC grants them:\n  Group:dev in team-a: webhook: no pods for dev on Fridays"},
		{name: "json", deny: map[string]string{"Group:dev": "webhook says no"}, format: "json", want: `"deniedBySubject": {
            "Group:dev": "webhook says no"
        }`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			streams, out, _ := testStreams()
			f := newCluster(&fakeCluster{fakeDiscovery: fakeDiscovery{resources: []resource.Resource{pods}},
				fakeObjects: fakeObjects{rbac: devGrant}, fakeAuthorizer: fakeAuthorizer{denySubjects: tt.deny}})
			ns := "team-a"
			if tt.allNS {
				ns = ""
			}
			o := &WhoCanOptions{Verify: true, AllNamespaces: tt.allNS, Output: &cmdutil.OutputFlags{Format: tt.format},
				IOStreams: streams, global: testGlobal(), client: f,
				target: parseTarget([]string{"get", "pods"}, ns)}
			require.NoError(t, completeAndRun(o))
			assert.Contains(t, out.String(), tt.want)
			assert.Equal(t, []string{"ReadRBAC " + ns, "Verify Group:dev get pods in team-a"}, f.asked)
		})
	}
}

// TestResolveTargetInvalidatesTheCache: a name the cached discovery does
// not know (a CRD installed since kubectl wrote the cache) is looked up
// again on the server, once; one it knows costs no second discovery.
func TestResolveTargetInvalidatesTheCache(t *testing.T) {
	pods := resource.Resource{Version: "v1", Name: "pods", Namespaced: true, Kind: "Pod", SingularName: "pod",
		ShortNames: []string{"po"}}
	widgets := resource.Resource{Group: "example.com", Version: "v1", Name: "widgets", Namespaced: true, Kind: "Widget",
		SingularName: "widget", ShortNames: []string{"wd"}}
	for _, tt := range []struct {
		name            string
		typed           string
		cached, fresh   []resource.Resource
		wantGroup       string
		wantDiscoveries int
		wantWarning     bool
	}{
		{name: "in the cache", typed: "po", cached: []resource.Resource{pods},
			fresh: []resource.Resource{pods, widgets}, wantDiscoveries: 1},
		{name: "new since the cache", typed: "wd", cached: []resource.Resource{pods},
			fresh: []resource.Resource{pods, widgets}, wantGroup: "example.com", wantDiscoveries: 2},
		{name: "not served at all: asked as typed, with a warning", typed: "gadgets", cached: []resource.Resource{pods},
			fresh: []resource.Resource{pods, widgets}, wantDiscoveries: 2, wantWarning: true},
		{name: "answered by the server already: no second request", typed: "gadgets", fresh: []resource.Resource{pods},
			wantDiscoveries: 1, wantWarning: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newCluster(&fakeCluster{fakeDiscovery: fakeDiscovery{resources: tt.fresh, cachedResources: tt.cached}})
			var warnings []string
			got,
				err := inspect.ResolveTarget(context.Background(), f, rbaceval.Target{Verb: "get", Resource: tt.typed},
				func(s string) { warnings = append(warnings, s) })
			require.NoError(t, err)
			assert.Equal(t, tt.wantDiscoveries, f.discoveries)
			assert.Equal(t, tt.wantGroup, got.Group)
			assert.Equal(t, tt.wantWarning, len(warnings) > 0, "%v", warnings)
		})
	}
}

// TestAccessAllNamespacesViews: access -A's table is a summary (the
// baseline every namespace allows, then what each allows beyond it);
// --resource narrows the rows (resolved as kubectl resolves names) and
// makes it one row per namespace and resource; -o wide is every matrix.
func TestAccessAllNamespacesViews(t *testing.T) {
	pods := resource.Resource{Version: "v1", Name: "pods", Namespaced: true, Kind: "Pod", SingularName: "pod",
		ShortNames: []string{"po"}}
	secrets := resource.Resource{Version: "v1", Name: "secrets", Namespaced: true, Kind: "Secret",
		SingularName: "secret"}
	output := func(format string) *cmdutil.OutputFlags {
		of := cmdutil.NewOutputFlags(pflag.NewFlagSet("t", pflag.ContinueOnError), "a table", "wide")
		of.Format = format
		return of
	}
	run := func(format string, resources ...string) (string, *fakeCluster) {
		f := newCluster(&fakeCluster{fakeIdentity: fakeIdentity{user: authnv1.UserInfo{Username: "alice"}},
			fakeDiscovery: fakeDiscovery{resources: []resource.Resource{pods, secrets}},
			fakeObjects:   fakeObjects{namespaces: []string{"a", "b", "c"}},
			fakeAuthorizer: fakeAuthorizer{allowed: map[string][]string{"pods": {"get"}},
				allowedIn: map[string]map[string][]string{"b": {"secrets": {"get", "list"}, "pods": {"list"}}}}})
		streams, out, _ := testStreams()
		o := &AccessOptions{Verbs: []string{"get", "list"}, Method: rbac.FromRules, AllNamespaces: true,
			Resources: resources,
			Output:    output(format), IOStreams: streams, global: testGlobal(), client: f}
		require.NoError(t, completeAndRun(o))
		return out.String(), f
	}
	summary, _ := run("")
	assert.Contains(t, summary,
		"# 3 namespaces; cells allowed (some names at least) in every one, the baseline: pods(get)\n")
	assert.Regexp(t, `(?m)^a +1 +-$`, summary)
	assert.Regexp(t, `(?m)^b +4 +pods\(list\) secrets\(get,list\)$`, summary)
	assert.NotContains(t, summary, "NAME ", "no matrix per namespace")

	byNS, f := run("", "po")
	assert.Equal(t,
		"NAMESPACE  RESOURCE  GET  LIST\na          pods      ✔    ✗\nb          pods      ✔    ✔\nc          pods      ✔    ✗\n", byNS)
	assert.Equal(t, 0, f.discoveries-1, "pods was in the discovery at hand")

	wide, _ := run("wide")
	assert.Equal(t, 3, strings.Count(wide, "# namespace "), "every matrix")

	_, err := func() (string, error) {
		f := newCluster(&fakeCluster{fakeDiscovery: fakeDiscovery{resources: []resource.Resource{pods}},
			fakeObjects: fakeObjects{namespaces: []string{"a"}}})
		streams, _, _ := testStreams()
		o := &AccessOptions{Verbs: []string{"get"}, Method: rbac.FromRules, AllNamespaces: true,
			Resources: []string{"gadgets"},
			Output:    &cmdutil.OutputFlags{Format: ""}, IOStreams: streams, global: testGlobal(), client: f}
		return "", completeAndRun(o)
	}()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--resource: ")
}

// TestWhoCanBySubject: who-can --by-subject groups the bindings by
// subject: a ClusterRoleBinding makes it every namespace, RoleBindings list
// their namespaces; a service account without a namespace takes its
// RoleBinding's, as RBAC reads it.
func TestWhoCanBySubject(t *testing.T) {
	reader := []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}
	rb := func(ns, name string, subjects ...rbacv1.Subject) rbacv1.RoleBinding {
		return rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "reader"}, Subjects: subjects}
	}
	alice := rbacv1.Subject{Kind: rbacv1.UserKind, Name: "alice"}
	ops := rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "ops"}
	builder := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "builder"}
	snap := &rbaceval.RBAC{Roles: map[string][]rbacv1.PolicyRule{},
		ClusterRoles: map[string][]rbacv1.PolicyRule{"reader": reader},
		RoleBindings: []rbacv1.RoleBinding{rb("b", "r", alice), rb("a", "r", alice, builder),
			rb("c", "r", builder)},
		ClusterRoleBindings: []rbacv1.ClusterRoleBinding{{ObjectMeta: metav1.ObjectMeta{Name: "ops-read"},
			RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "reader"}, Subjects: []rbacv1.Subject{ops}}}}
	pods := resource.Resource{Version: "v1", Name: "pods", Namespaced: true, Kind: "Pod", SingularName: "pod",
		ShortNames: []string{"po"}}
	run := func(format string) string {
		streams, out, _ := testStreams()
		of := cmdutil.NewOutputFlags(pflag.NewFlagSet("t", pflag.ContinueOnError), "a table")
		of.Format = format
		o := &WhoCanOptions{BySubject: true, AllNamespaces: true, Output: of, IOStreams: streams, global: testGlobal(),
			client: newCluster(&fakeCluster{fakeDiscovery: fakeDiscovery{resources: []resource.Resource{pods}},
				fakeObjects: fakeObjects{rbac: snap}}), target: parseTarget([]string{"get", "pods"}, "")}
		require.NoError(t, completeAndRun(o))
		return out.String()
	}
	var got []inspect.SubjectAccess
	require.NoError(t, json.Unmarshal([]byte(run("json")), &got))
	assert.Equal(t, []inspect.SubjectAccess{
		{Kind: "Group", Name: "ops", ClusterWide: true, Bindings: []string{"ClusterRoleBinding ops-read"}},
		{Kind: "ServiceAccount", Name: "builder", Namespace: "a", Namespaces: []string{"a"},
			Bindings: []string{"RoleBinding a/r"}},
		{Kind: "ServiceAccount", Name: "builder", Namespace: "c", Namespaces: []string{"c"},
			Bindings: []string{"RoleBinding c/r"}},
		{Kind: "User", Name: "alice", Namespaces: []string{"a", "b"},
			Bindings: []string{"RoleBinding a/r", "RoleBinding b/r"}},
	}, got)
	table := run("")
	assert.Regexp(t, `(?m)^Group ops +every namespace +ClusterRoleBinding ops-read$`, table)
	assert.Regexp(t, `(?m)^User alice +a,b +RoleBinding a/r, RoleBinding b/r$`, table)
	assert.Contains(t, table, "These are the RBAC bindings only")

	assert.Equal(t, "a,b", namespaceList([]string{"a", "b"}, 8))
	assert.Equal(t, "a,b (+2, 4 namespaces)", namespaceList([]string{"a", "b", "c", "d"}, 2))
}

// TestAccessAllNamespacesConcurrently: where each namespace needs its own
// rules review, access -A builds 16 matrices at a time, keeps their order,
// shares --max-reviews among them (a matrix over the budget is refused
// before it sends a review), and stops at Ctrl-C (the context) with one line.
func TestAccessAllNamespacesConcurrently(t *testing.T) {
	pods := resource.Resource{Version: "v1", Name: "pods", Namespaced: true, Kind: "Pod"}
	var names []string
	for i := range 40 {
		names = append(names, fmt.Sprintf("ns-%02d", i))
	}
	newRun := func(f *fakeCluster, maxReviews int) (*AccessOptions, *strings.Builder) {
		streams, out, _ := testStreams()
		of := cmdutil.NewOutputFlags(pflag.NewFlagSet("t", pflag.ContinueOnError), "a table", "wide")
		of.Format = "json"
		return &AccessOptions{Verbs: []string{"get"}, Method: rbac.FromRules, AllNamespaces: true,
			MaxReviews: maxReviews,
			Output:     of, IOStreams: streams, global: testGlobal(), client: f}, out
	}
	f := newCluster(&fakeCluster{fakeDiscovery: fakeDiscovery{resources: []resource.Resource{pods}},
		fakeObjects:    fakeObjects{namespaces: names},
		fakeAuthorizer: fakeAuthorizer{allowed: map[string][]string{"pods": {"get"}}, delay: 20 * time.Millisecond}})
	o, out := newRun(f, 0)
	start := time.Now()
	require.NoError(t, completeAndRun(o))
	elapsed := time.Since(start)
	var ms []rbac.Matrix
	require.NoError(t, json.Unmarshal([]byte(out.String()), &ms))
	require.Len(t, ms, 40)
	for i, m := range ms {
		assert.Equal(t, names[i], m.Namespace, "the namespaces' order")
	}
	assert.Equal(t, int32(inspect.NamespaceConcurrency), f.maxInFlight, "16 at a time")
	assert.Less(t, elapsed, 40*20*time.Millisecond/2, "not one after the other")

	// --max-reviews is shared: 40 matrices of 10 reviews, 1 rules review
	// each, against 200.
	f = newCluster(&fakeCluster{fakeDiscovery: fakeDiscovery{resources: []resource.Resource{pods}},
		fakeObjects: fakeObjects{namespaces: names}, fakeAuthorizer: fakeAuthorizer{reviewsPerMatrix: 10}})
	o, _ = newRun(f, 200)
	err := completeAndRun(o)
	require.ErrorIs(t, err, rbac.ErrTooManyReviews)
	assert.Contains(t, err.Error(), "raise --max-reviews")

	// Ctrl-C: the context ends; one line says how far it got.
	f = newCluster(&fakeCluster{fakeDiscovery: fakeDiscovery{resources: []resource.Resource{pods}},
		fakeObjects: fakeObjects{namespaces: names}, fakeAuthorizer: fakeAuthorizer{delay: 50 * time.Millisecond}})
	o, _ = newRun(f, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Millisecond)
	defer cancel()
	err = o.Run(ctx)
	require.Error(t, err)
	assert.Regexp(t, `^interrupted with \d+ of 40 namespaces answered: context deadline exceeded$`, err.Error())
}

// resolvingOptions are the options of the commands that resolve their
// arguments through discovery in Complete.
type resolvingOptions interface {
	resolveArgs(ctx context.Context) error
	Run(ctx context.Context) error
}

// completeAndRun runs o as RunE does once Complete has built its clients (the
// tests' fakes): the arguments resolved through discovery, then Run.
func completeAndRun(o resolvingOptions) error {
	ctx := context.Background()
	if err := o.resolveArgs(ctx); err != nil {
		return err
	}
	return o.Run(ctx)
}

// TestGraphRun: --graph draws who the server says you are (or --as) and
// the RBAC objects read with your own rights; who-can --graph the grants.
func TestGraphRun(t *testing.T) {
	streams, out, _ := testStreams()
	f := newCluster(&fakeCluster{fakeIdentity: fakeIdentity{user: alice}, fakeObjects: fakeObjects{rbac: devGrant}})
	o := &AccessOptions{Graph: true, Output: &cmdutil.OutputFlags{Format: "dot"}, IOStreams: streams,
		global: testGlobal(), client: f, caller: f, namespace: "team-a",
		claims: func(context.Context) map[string][]string {
			return map[string][]string{"email": {"alice@example.com"}, "groups": {"dev"}}
		}}
	require.NoError(t, o.Run(context.Background()))
	assert.Contains(t, out.String(), `"claim:email=alice@example.com" -> "identity:alice@example.com";`)
	assert.Contains(t, out.String(), `"claim:groups=dev" -> "group:dev";`)
	assert.Contains(t, out.String(), `"binding:RoleBinding/team-a/devs-read-pods" -> "role:Role/team-a/pod-reader";`)
	assert.Contains(t, out.String(), `"identity:alice@example.com" -> "group:dev";`, "who the server says")
	assert.Equal(t, []string{"ReadRBAC team-a"}, f.asked)

	streams, out, _ = testStreams()
	f = newCluster(&fakeCluster{fakeDiscovery: fakeDiscovery{resources: []resource.Resource{pods}},
		fakeObjects: fakeObjects{rbac: devGrant}})
	w := &WhoCanOptions{Graph: true, Output: &cmdutil.OutputFlags{Format: "svg"}, IOStreams: streams,
		global: testGlobal(), client: f, target: parseTarget([]string{"get", "pods"}, "team-a")}
	require.NoError(t, completeAndRun(w))
	assert.Contains(t, out.String(), `data-node="group:Group//dev"`)
	assert.Contains(t, out.String(), `data-node="target:get pods in namespace team-a"`)

	for _, tt := range []struct {
		o    cmdutil.FlagValidator
		want string
	}{
		{&AccessOptions{Verbs: []string{"get"}, Method: rbac.FromRules, Output: &cmdutil.OutputFlags{Format: "svg"}},
			"-o svg draws the graph: add --graph"},
		{&AccessOptions{Graph: true, Verbs: []string{"get"}, Method: rbac.FromRules,
			Output: &cmdutil.OutputFlags{Format: "wide"}}, `not "wide"`},
		{&WhoCanOptions{Output: &cmdutil.OutputFlags{Format: "html"}}, "-o html draws the graph"},
	} {
		assert.ErrorContains(t, tt.o.ValidateFlags(), tt.want)
	}
}
