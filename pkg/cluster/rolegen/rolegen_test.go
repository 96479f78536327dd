package rolegen

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/auditlog"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/risk"
)

func TestGenerate(t *testing.T) {
	sub := &rbacv1.Subject{Kind: "User", Name: "robot"}
	reqs := []auditlog.Request{
		{Verb: "get", Path: "/api", Decision: auditlog.Allow}, {Verb: "get", Path: "/apis/apps/v1", Decision: auditlog.Allow}, {Verb: "get", Path: "/version", Decision: auditlog.Allow},
		{Verb: "get", Resource: "configmaps", Namespace: "a", Name: "one", Decision: auditlog.Allow},
		{Verb: "get", Resource: "configmaps", Namespace: "a", Name: "two", Decision: auditlog.Allow},
		{Verb: "update", Resource: "configmaps", Namespace: "a", Name: "one", Decision: auditlog.Allow},
		{Verb: "list", Resource: "pods", Namespace: "a", Decision: auditlog.Allow},
		{Verb: "watch", Resource: "pods", Namespace: "a", Decision: auditlog.Allow},
		{Verb: "get", Resource: "pods", Namespace: "a", Name: "web", Decision: auditlog.Allow},
		{Verb: "get", Resource: "pods", Subresource: "log", Namespace: "a", Name: "web", Decision: auditlog.Allow},
		{Verb: "get", Resource: "pods", Subresource: "exec", Namespace: "a", Name: "web", Decision: auditlog.Allow,
			Code: 101}, // a WebSocket exec: kube-apiserver asked create too
		{Verb: "get", Resource: "pods", Subresource: "attach", Namespace: "a", Name: "web", Decision: auditlog.Allow,
			Code: 404}, // not upgraded: get alone
		{Verb: "delete", Resource: "secrets", Namespace: "a", Name: "s", Decision: auditlog.Forbid, Code: 403},
		{Verb: "get", Resource: "secrets", Namespace: "b", Name: "s1", Decision: auditlog.Allow}, {Verb: "get", Resource: "secrets",
			Namespace: "b", Name: "s2", Decision: auditlog.Allow}, {Verb: "get", Resource: "secrets", Namespace: "b", Name: "s3", Decision: auditlog.Allow},
		{Verb: "list", Resource: "nodes", Decision: auditlog.Allow},
		{Verb: "get", Path: "/metrics", Decision: auditlog.Allow},
		{Verb: "impersonate", Resource: "users", Name: "bob", Decision: auditlog.Allow},
	}
	p := Generate(reqs, PolicyOptions{Name: "ci", Subject: sub, MaxNames: 2})
	require.Len(t, p.Roles, 2)
	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"one"},
			Verbs: []string{"update"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"one", "two"},
			Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"pods", "pods/attach", "pods/log"}, ResourceNames: []string{"web"},
			Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"pods/exec"}, ResourceNames: []string{"web"},
			Verbs: []string{"get", "create"}},
	}, p.Roles[0].Rules, "names kept apart by verb; the exec's WebSocket get beside its create")
	assert.Equal(t, "a", p.Roles[0].Namespace)
	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}, // 3 names > 2
	}, p.Roles[1].Rules)
	require.NotNil(t, p.ClusterRole)
	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list"}},
		{APIGroups: []string{""}, Resources: []string{"users"}, ResourceNames: []string{"bob"},
			Verbs: []string{"impersonate"}},
		{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}},
	}, p.ClusterRole.Rules)
	require.Len(t, p.RoleBindings, 2)
	assert.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "ci"},
		p.RoleBindings[1].RoleRef)
	assert.Equal(t, []rbacv1.Subject{*sub}, p.ClusterRoleBinding.Subjects)
	assert.Equal(t, 3, p.Discovery)
	assert.Len(t, p.Refused, 1)
	assert.Len(t, p.Used, 13)
	var esc []string
	for _, e := range p.Escalations {
		esc = append(esc, Cell{Namespace: e.Namespace, Verb: e.Verb, Resource: e.Resource}.String())
	}
	assert.Equal(t, []string{"impersonate users", "get pods/attach in a", "get pods/exec in a", "create pods/exec in a",
		"get secrets in b"}, esc)
	assert.Equal(t, risk.Credentials, p.Escalations[4].Kind)

	none := Generate(nil, PolicyOptions{})
	assert.Empty(t, none.Roles)
	assert.Nil(t, none.ClusterRole)
}

// TestWildcardsAreNotGranted: a request naming "*" got a 404 (no such
// object), yet a rule of it would grant everything.
func TestWildcardsAreNotGranted(t *testing.T) {
	p := Generate([]auditlog.Request{
		{Verb: "list", APIGroup: "*", Resource: "*", Code: 404, Decision: auditlog.Allow},
		{Verb: "create", Resource: "*", Namespace: "a", Code: 404, Decision: auditlog.Allow},
		{Verb: "get", Path: "/*", Code: 404, Decision: auditlog.Allow},
		{Verb: "*", Resource: "secrets", Namespace: "a", Decision: auditlog.Allow},
		{Verb: "get", Resource: "pods", Subresource: "*", Namespace: "a", Name: "p", Decision: auditlog.Allow},
		{Verb: "get", Resource: "pods", Namespace: "a", Name: "p", Decision: auditlog.Allow},
	}, PolicyOptions{})
	assert.Len(t, p.Wildcards, 5)
	assert.Nil(t, p.ClusterRole)
	require.Len(t, p.Roles, 1)
	assert.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"},
		ResourceNames: []string{"p"}, Verbs: []string{"get"}}}, p.Roles[0].Rules)
}

// TestImpersonationAsTheClusterAllowedIt: the impersonate checks of an
// audit event are granted as the cluster made them: constrained when the
// event carries the constraint (impersonate:MODE on the identity,
// impersonate-on:MODE:VERB on the request, never the legacy verb that
// allows every verb), without the groups kube-apiserver added itself, and
// only once the authorizer decided (the impersonation filter, before it,
// had then let the request through).
func TestImpersonationAsTheClusterAllowedIt(t *testing.T) {
	const robot = "system:serviceaccount:ci:robot"
	line := func(impersonated map[string]any, constraint string, code int, decision string) string {
		ev := map[string]any{"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "auditID": "1",
			"stage": "ResponseComplete", "requestURI": "/api/v1/namespaces/web/pods", "verb": "list",
			"user": map[string]any{"username": robot}, "impersonatedUser": impersonated,
			"objectRef":      map[string]any{"resource": "pods", "namespace": "web"},
			"responseStatus": map[string]any{"code": code}}
		if constraint != "" {
			ev["authenticationMetadata"] = map[string]any{"impersonationConstraint": constraint}
		}
		if decision != "" {
			ev["annotations"] = map[string]any{auditlog.DecisionAnnotation: decision}
		}
		b, err := json.Marshal(ev)
		require.NoError(t, err)
		return string(b)
	}
	sa := map[string]any{"username": "system:serviceaccount:web:app", "groups": []string{"system:serviceaccounts",
		"system:serviceaccounts:web", "system:authenticated"}}
	alice := map[string]any{"username": "alice", "groups": []string{"team", "system:authenticated"},
		"extra": map[string]any{"reason": []string{"INC-1"}}}
	for _, tt := range []struct {
		name string
		line string
		want []auditlog.Request
	}{
		{"constrained, serviceaccount mode", line(sa, "impersonate:serviceaccount", 200, "allow"), []auditlog.Request{
			{Verb: "impersonate:serviceaccount", APIGroup: "authentication.k8s.io", Resource: "serviceaccounts",
				Namespace: "web", Name: "app", Code: 200, Decision: auditlog.Allow},
			{Verb: "impersonate-on:serviceaccount:list", Resource: "pods", Namespace: "web", Code: 200, Decision: auditlog.Allow},
		}},
		{"constrained, user-info mode, refused for the user", line(alice, "impersonate:user-info", 403, "forbid"),
			[]auditlog.Request{
				{Verb: "impersonate:user-info", APIGroup: "authentication.k8s.io", Resource: "users", Name: "alice",
					Code: 403, Decision: auditlog.Allow},
				{Verb: "impersonate:user-info", APIGroup: "authentication.k8s.io", Resource: "groups", Name: "team",
					Code: 403, Decision: auditlog.Allow},
				{Verb: "impersonate:user-info", APIGroup: "authentication.k8s.io", Resource: "userextras",
					Subresource: "reason", Name: "INC-1", Code: 403, Decision: auditlog.Allow},
				{Verb: "impersonate-on:user-info:list", Resource: "pods", Namespace: "web", Code: 403, Decision: auditlog.Allow},
			}},
		{"legacy", line(sa, "", 200, "allow"), []auditlog.Request{
			{Verb: "impersonate", Resource: "serviceaccounts", Namespace: "web", Name: "app", Code: 200,
				Decision: auditlog.Allow},
		}},
		{"impersonated, then no decision (429): undecided", line(alice, "", 429, ""), []auditlog.Request{
			{Verb: "impersonate", Resource: "users", Name: "alice", Code: 429},
			{Verb: "impersonate", Resource: "groups", Name: "team", Code: 429},
			{Verb: "impersonate", APIGroup: "authentication.k8s.io", Resource: "userextras", Subresource: "reason",
				Name: "INC-1", Code: 429},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := auditlog.Read(strings.NewReader(tt.line), auditlog.ReadOptions{User: robot})
			require.NoError(t, err)
			assert.Equal(t, tt.want, got.Requests)
		})
	}
	got, err := auditlog.Read(strings.NewReader(line(sa, "impersonate:serviceaccount", 200, "allow")), auditlog.ReadOptions{User: robot})
	require.NoError(t, err)
	p := Generate(got.Requests, PolicyOptions{})
	assert.Nil(t, p.ClusterRole, "nothing at cluster scope: no group the server added")
	require.Len(t, p.Roles, 1)
	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"impersonate-on:serviceaccount:list"}},
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"serviceaccounts"},
			ResourceNames: []string{"app"}, Verbs: []string{"impersonate:serviceaccount"}},
	}, p.Roles[0].Rules)
}

// TestSecondReviewAttacks: what an attacker's review of the
// positive-evidence rule found granted wider than the cluster allowed,
// each a row: the log, and the rules it may give at most.
func TestSecondReviewAttacks(t *testing.T) {
	const robot = "system:serviceaccount:ci:robot"
	line := func(id, verb, uri string, ref map[string]any, code int, extra map[string]any) string {
		ev := map[string]any{"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "auditID": id,
			"stage": "ResponseComplete", "requestURI": uri, "verb": verb, "user": map[string]any{"username": robot},
			"objectRef": ref, "responseStatus": map[string]any{"code": code},
			"annotations": map[string]any{auditlog.DecisionAnnotation: "allow"}}
		for k, v := range extra {
			ev[k] = v
		}
		b, err := json.Marshal(ev)
		require.NoError(t, err)
		return string(b)
	}
	secret := func(name string) map[string]any {
		return map[string]any{"resource": "secrets", "namespace": "ci", "name": name}
	}
	var six []string
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		six = append(six, line("s"+n, "get", "/api/v1/namespaces/ci/secrets/"+n, secret(n), 404, nil))
	}
	for _, tt := range []struct {
		name  string
		lines []string
		want  []rbacv1.PolicyRule
	}{
		{"a create the URL names keeps its name (POST .../secrets/foo, 405)", []string{
			line("1", "create", "/api/v1/namespaces/ci/secrets/foo", secret("foo"), 405, nil)},
			[]rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"foo"},
				Verbs: []string{"create"}}}},
		{"a create the URL does not name loses the response's name", []string{
			line("1", "create", "/api/v1/namespaces/ci/secrets", secret("made"), 201, nil)},
			[]rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}}}},
		{"six names stay six names (no --max-names widening by default)", six,
			[]rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"},
				ResourceNames: []string{"a", "b", "c", "d", "e", "f"}, Verbs: []string{"get"}}}},
		{"a get of pods/exec not upgraded (404) is get alone", []string{line("1", "get",
			"/api/v1/namespaces/ci/pods/x/exec", map[string]any{"resource": "pods", "subresource": "exec",
				"namespace": "ci", "name": "x"}, 404, nil)},
			[]rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/exec"}, ResourceNames: []string{"x"},
				Verbs: []string{"get"}}}},
		{"system:unauthenticated, which kube-apiserver adds to system:anonymous, is not granted", []string{line("1",
			"get", "/api/v1/namespaces/ci/configmaps/x", map[string]any{"resource": "configmaps", "namespace": "ci",
				"name": "x"}, 200, map[string]any{"impersonatedUser": map[string]any{"username": "system:anonymous",
				"groups": []string{"system:unauthenticated"}}})},
			[]rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"users"},
				ResourceNames: []string{"system:anonymous"}, Verbs: []string{"impersonate"}}}},
		{"a group named * (what the constrained filter asks for four or more) is not granted", []string{line("1",
			"list", "/api/v1/namespaces/ci/pods", map[string]any{"resource": "pods", "namespace": "ci"}, 200,
			map[string]any{"impersonatedUser": map[string]any{"username": "alice", "groups": []string{"*"}},
				"authenticationMetadata": map[string]any{"impersonationConstraint": "impersonate:user-info"}})},
			[]rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"impersonate-on:user-info:list"}},
				{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"users"},
					ResourceNames: []string{"alice"}, Verbs: []string{"impersonate:user-info"}}}},
		{"a reused Audit-ID does not hide a second request", []string{
			line("same", "get", "/api/v1/namespaces/ci/secrets/a", secret("a"), 200, nil),
			line("same", "get", "/api/v1/namespaces/ci/secrets/b", secret("b"), 200, nil)},
			[]rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"},
				ResourceNames: []string{"a", "b"}, Verbs: []string{"get"}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := auditlog.Read(strings.NewReader(strings.Join(tt.lines, "\n")), auditlog.ReadOptions{User: robot})
			require.NoError(t, err)
			require.Zero(t, l.Skipped, l.Skips)
			p := Generate(l.Requests, PolicyOptions{})
			var got []rbacv1.PolicyRule
			for _, r := range p.Roles {
				got = append(got, r.Rules...)
			}
			if p.ClusterRole != nil {
				got = append(got, p.ClusterRole.Rules...)
			}
			assert.Equal(t, tt.want, got)
		})
	}
	p := Generate([]auditlog.Request{{Verb: "get", Resource: "secrets", Namespace: "a", Name: "x", Decision: auditlog.Allow},
		{Verb: "get", Resource: "secrets", Namespace: "a", Name: "y", Decision: auditlog.Allow}}, PolicyOptions{MaxNames: 1})
	assert.Equal(t, []Cell{{Namespace: "a", Verb: "get", Resource: "secrets"}}, p.Widened,
		"--max-names widening is the user's word, and said")
}

// Generated rules list their verbs in kubectl's order, then the others by
// name.
func TestVerbOrder(t *testing.T) {
	p := Generate([]auditlog.Request{
		{Verb: "delete", Resource: "pods", Namespace: "a", Decision: auditlog.Allow},
		{Verb: "list", Resource: "pods", Namespace: "a", Decision: auditlog.Allow},
		{Verb: "impersonate", Resource: "pods", Namespace: "a", Decision: auditlog.Allow},
		{Verb: "bind", Resource: "pods", Namespace: "a", Decision: auditlog.Allow},
		{Verb: "get", Resource: "pods", Namespace: "a", Decision: auditlog.Allow},
	}, PolicyOptions{})
	require.Len(t, p.Roles, 1)
	assert.Equal(t, []string{"get", "list", "delete", "bind", "impersonate"}, p.Roles[0].Rules[0].Verbs,
		"kubectl's order, then the others by name")
}
