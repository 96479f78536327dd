package usage

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/risk"
)

// event is a line of kube-apiserver's audit log.
func event(id, stage, user, impersonated, verb, uri string, ref string, code int, decision string) string {
	ev := map[string]any{"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "auditID": id,
		"stage": stage, "requestURI": uri, "verb": verb, "user": map[string]any{"username": user,
			"groups": []string{"system:authenticated"}}}
	if impersonated != "" {
		ev["impersonatedUser"] = map[string]any{"username": impersonated, "groups": []string{"team"}}
	}
	if ref != "" {
		parts := strings.Split(ref, "|") // group|resource|sub|ns|name
		ev["objectRef"] = map[string]any{"apiGroup": parts[0], "resource": parts[1], "subresource": parts[2],
			"namespace": parts[3], "name": parts[4]}
	}
	if code != 0 {
		ev["responseStatus"] = map[string]any{"code": code}
	}
	if decision != "" {
		ev["annotations"] = map[string]any{decisionAnnotation: decision}
	}
	b, _ := json.Marshal(ev)
	return string(b)
}

func TestRead(t *testing.T) {
	log := strings.Join([]string{
		event("1", "RequestReceived", "alice", "", "list", "/api/v1/namespaces/a/pods", "|pods||a|", 0, ""),
		event("1", "ResponseComplete", "alice", "", "list", "/api/v1/namespaces/a/pods", "|pods||a|", 200, "allow"),
		event("2", "ResponseStarted", "alice", "", "watch", "/api/v1/namespaces/a/pods?watch=1", "|pods||a|", 200,
			"allow"),
		event("2", "ResponseComplete", "alice", "", "watch", "/api/v1/namespaces/a/pods?watch=1", "|pods||a|", 200,
			"allow"),
		event("3", "ResponseStarted", "alice", "", "get", "/api/v1/namespaces/a/pods/p/log", "|pods|log|a|p", 200,
			"allow"),
		event("4", "ResponseComplete", "alice", "", "create", "/api/v1/namespaces/a/configmaps",
			"|configmaps||a|made", 201, "allow"),
		event("5", "ResponseComplete", "alice", "", "delete", "/api/v1/namespaces/b/secrets/s", "|secrets||b|s",
			403, "forbid"),
		event("6", "ResponseComplete", "alice", "", "create", "/api/v1/namespaces/a/pods", "|pods||a|p", 403,
			"allow"), // refused by admission: RBAC allowed it
		event("7", "ResponseComplete", "alice", "", "get", "/version?timeout=32s", "", 200, "allow"),
		"",
		event("8", "ResponseComplete", "bob", "", "list", "/api/v1/namespaces/a/pods", "|pods||a|", 200, "allow"),
		event("9", "ResponseComplete", "admin", "alice", "get", "/api/v1/namespaces/c/pods/x", "|pods||c|x", 200,
			"allow"),
		event("10", "ResponseComplete", "alice", "", "get", "/api/v1/namespaces/a/pods/y", "|pods||a|y", 200, "allow"),
		// A later line of a stage before the response does not replace it.
		event("10", "ResponseStarted", "alice", "", "get", "/api/v1/namespaces/a/pods/y", "|pods||a|y", 500, ""),
	}, "\n")
	got, err := Read(strings.NewReader(log), ReadOptions{User: "alice"})
	require.NoError(t, err)
	assert.Equal(t, []Request{
		{User: "alice", Verb: "list", Resource: "pods", Namespace: "a", Code: 200, Decision: Allow},
		{User: "alice", Verb: "watch", Resource: "pods", Namespace: "a", Code: 200, Decision: Allow},
		{User: "alice", Verb: "get", Resource: "pods", Subresource: "log", Namespace: "a", Name: "p", Code: 200,
			Decision: Allow},
		{User: "alice", Verb: "create", Resource: "configmaps", Namespace: "a", Code: 201, Decision: Allow},
		{User: "alice", Verb: "delete", Resource: "secrets", Namespace: "b", Name: "s", Code: 403, Decision: Forbid},
		{User: "alice", Verb: "create", Resource: "pods", Namespace: "a", Code: 403, Decision: Allow},
		{User: "alice", Verb: "get", Path: "/version", Code: 200, Decision: Allow},
		{User: "alice", Verb: "get", Resource: "pods", Namespace: "c", Name: "x", Code: 200, Decision: Allow},
		{User: "alice", Verb: "get", Resource: "pods", Namespace: "a", Name: "y", Code: 200, Decision: Allow},
	}, got.Requests)

	got, err = Read(strings.NewReader(log), ReadOptions{User: "admin"})
	require.NoError(t, err)
	assert.Equal(t, []Request{{Verb: "impersonate", Resource: "users", Name: "alice", Code: 200, Decision: Allow},
		{Verb: "impersonate", Resource: "groups", Name: "team", Code: 200, Decision: Allow}}, got.Requests,
		"admin's own part: the impersonation")

	for _, bad := range []string{"not json", `{"kind":"Pod","apiVersion":"v1"}`} {
		got, err := Read(strings.NewReader(event("1", "ResponseComplete", "a", "", "get", "/", "", 200, "allow")+
			"\n"+bad), ReadOptions{})
		require.NoError(t, err, "a bad line is skipped, never fatal")
		assert.Len(t, got.Requests, 1)
		assert.Equal(t, 1, got.Skipped)
		assert.Contains(t, got.Skips[0], "line 2: ", bad)
	}
}

func TestRecordedEventsReadBack(t *testing.T) {
	at := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	reqs := []Request{
		{Verb: "impersonate", Resource: "users", Name: "bob", Code: 200, Decision: Allow},
		{Verb: "get", APIGroup: "apps", Resource: "deployments", Subresource: "scale", Namespace: "a", Name: "d",
			Code: 200, Decision: Allow},
		{Verb: "list", Resource: "secrets", Namespace: "a", Code: 403, Decision: Forbid},
		{Verb: "get", Path: "/metrics", Code: 200, Decision: Allow},
		{Verb: "get", Resource: "pods", Namespace: "a", Code: 429},
	}
	var buf bytes.Buffer
	for _, r := range reqs {
		b, err := json.Marshal(r.Event("/x?y=1", "", at))
		require.NoError(t, err)
		buf.Write(append(b, '\n'))
	}
	b, err := json.Marshal(Request{Verb: "list", Resource: "pods", Code: 200}.Event("/api/v1/pods", "bob", at))
	require.NoError(t, err)
	buf.Write(b)
	got, err := Read(&buf, ReadOptions{})
	require.NoError(t, err)
	reqs[3].Path = "/x" // the URI's path
	assert.Equal(t, reqs, got.Requests, "the request sent as bob is bob's")
}

func TestGenerate(t *testing.T) {
	sub := &rbacv1.Subject{Kind: "User", Name: "robot"}
	reqs := []Request{
		{Verb: "get", Path: "/api", Decision: Allow}, {Verb: "get", Path: "/apis/apps/v1", Decision: Allow}, {Verb: "get", Path: "/version", Decision: Allow},
		{Verb: "get", Resource: "configmaps", Namespace: "a", Name: "one", Decision: Allow},
		{Verb: "get", Resource: "configmaps", Namespace: "a", Name: "two", Decision: Allow},
		{Verb: "update", Resource: "configmaps", Namespace: "a", Name: "one", Decision: Allow},
		{Verb: "list", Resource: "pods", Namespace: "a", Decision: Allow},
		{Verb: "watch", Resource: "pods", Namespace: "a", Decision: Allow},
		{Verb: "get", Resource: "pods", Namespace: "a", Name: "web", Decision: Allow},
		{Verb: "get", Resource: "pods", Subresource: "log", Namespace: "a", Name: "web", Decision: Allow},
		{Verb: "get", Resource: "pods", Subresource: "exec", Namespace: "a", Name: "web", Decision: Allow,
			Code: 101}, // a WebSocket exec: kube-apiserver asked create too
		{Verb: "get", Resource: "pods", Subresource: "attach", Namespace: "a", Name: "web", Decision: Allow,
			Code: 404}, // not upgraded: get alone
		{Verb: "delete", Resource: "secrets", Namespace: "a", Name: "s", Decision: Forbid, Code: 403},
		{Verb: "get", Resource: "secrets", Namespace: "b", Name: "s1", Decision: Allow}, {Verb: "get", Resource: "secrets",
			Namespace: "b", Name: "s2", Decision: Allow}, {Verb: "get", Resource: "secrets", Namespace: "b", Name: "s3", Decision: Allow},
		{Verb: "list", Resource: "nodes", Decision: Allow},
		{Verb: "get", Path: "/metrics", Decision: Allow},
		{Verb: "impersonate", Resource: "users", Name: "bob", Decision: Allow},
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

// TestReadProxyLog: the impersonating proxy's audit lines are read as the
// audit log's: the request's attributes as the user, decided by the
// cluster's answer when it answered (a 403 refused: the proxy cannot tell
// admission's), undecided when the proxy answered itself (its 502) or the
// line does not say (a proxy older than "answered"); a line refused
// before authentication no one's, a line without the attributes skipped.
func TestReadProxyLog(t *testing.T) {
	log := strings.Join([]string{
		`{"time":"t","remote":"127.0.0.1:1","verb":"GET","path":"/api/v1/namespaces/a/pods","code":200,"latencyMs":1,` +
			`"answered":true,"user":"alice","groups":["dev"],"request":{"verb":"watch","resource":"pods",` +
			`"namespace":"a","code":0}}`,
		`{"time":"t","remote":"127.0.0.1:1","verb":"DELETE","path":"/api/v1/namespaces/a/secrets/s","code":403,` +
			`"user":"alice","request":{"verb":"delete","resource":"secrets","namespace":"a","name":"s","code":0}}`,
		`{"time":"t","remote":"127.0.0.1:1","verb":"GET","path":"/api","code":401,"reason":"token refused"}`,
		`{"time":"t","verb":"GET","path":"/api","code":200,"answered":true,"user":"bob","request":{"verb":"get",` +
			`"path":"/api"}}`,
		`{"time":"t","verb":"DELETE","path":"/api/v1/namespaces/a/pods","code":502,"answered":false,"user":"alice",` +
			`"request":{"verb":"deletecollection","resource":"pods","namespace":"a"}}`,
		`{"time":"t","verb":"GET","path":"/api/v1/namespaces/a/configmaps","code":200,"user":"alice",` +
			`"request":{"verb":"list","resource":"configmaps","namespace":"a"}}`,
	}, "\n")
	got, err := Read(strings.NewReader(log), ReadOptions{User: "alice"})
	require.NoError(t, err)
	assert.Equal(t, []Request{
		{User: "alice", Verb: "watch", Resource: "pods", Namespace: "a", Code: 200, Decision: Allow},
		{User: "alice", Verb: "delete", Resource: "secrets", Namespace: "a", Name: "s", Code: 403, Decision: Forbid},
		{User: "alice", Verb: "deletecollection", Resource: "pods", Namespace: "a", Code: 502},
		{User: "alice", Verb: "list", Resource: "configmaps", Namespace: "a", Code: 200},
	}, got.Requests)
	got, err = Read(strings.NewReader(`{"verb":"GET","path":"/api","code":200,"user":"bob"}`), ReadOptions{User: "bob"})
	require.NoError(t, err)
	assert.Equal(t, 1, got.Skipped)
	assert.Contains(t, got.Skips[0], "line 1: a proxy's line without the request's attributes")
}

// TestReadSkipsWhatNoServerAuthorizes: a log someone else wrote must not
// put a newline (a YAML document of its own), a control or a bidirectional
// override into what kubectl applies or the comments above it; nor may
// one such line stop the rest being read.
func TestReadSkipsWhatNoServerAuthorizes(t *testing.T) {
	good := event("0", "ResponseComplete", "a", "", "get", "/x", "|configmaps||a|c", 200, "allow")
	for _, tt := range []struct{ ref, verb, want string }{
		{"|configmaps||a\napiVersion: v1\n---\n#|", "get", "the namespace"},
		{"|configmaps||A|", "get", "the namespace"},
		{"ex ample|widgets||a|", "get", "the API group"},
		{"|configmaps||a|x\u202ey", "get", "the name"},
		{"|config\u001bmaps||a|", "get", "the resource"},
		{"|configmaps||a|", "get\nlist", "the verb"},
	} {
		got, err := Read(strings.NewReader(event("1", "ResponseComplete", "a", "", tt.verb, "/x", tt.ref, 200,
			"allow")+"\n"+good), ReadOptions{})
		require.NoError(t, err)
		assert.Equal(t, 1, got.Skipped, tt.ref)
		assert.Contains(t, got.Skips[0], "line 1: "+tt.want, tt.ref)
		assert.Len(t, got.Requests, 1, "the good line is still read")
	}
	got, err := Read(strings.NewReader(`{"verb":"GET","code":200,"user":"bob","request":{"verb":"get",`+
		`"resource":"pods","namespace":"a\nb"}}`), ReadOptions{User: "bob"})
	require.NoError(t, err)
	assert.Contains(t, got.Skips[0], "line 1: the namespace", "the proxy's lines too")
	for _, tt := range []struct {
		n       int
		skipped int
	}{{1024, 0}, {1025, 1}} {
		name := strings.Repeat("n", tt.n)
		got, err = Read(strings.NewReader(event("1", "ResponseComplete", "a", "", "get", "/x",
			"|configmaps||a|"+name, 200, "allow")), ReadOptions{})
		require.NoError(t, err)
		assert.Equal(t, tt.skipped, got.Skipped, "a name of %d bytes", tt.n)
	}
	atMost := strings.Repeat("x", maxLine-1) // with its newline, maxLine: read, and not JSON
	got, err = Read(strings.NewReader(atMost+"\n"), ReadOptions{})
	require.NoError(t, err)
	require.Len(t, got.Skips, 1)
	assert.Contains(t, got.Skips[0], "not a JSON audit event")
	long := strings.Repeat("x", maxLine+10)
	got, err = Read(strings.NewReader(long+"\n"+good+"\n"+long), ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, 2, got.Skipped, "a line too long is skipped, to its end")
	assert.Len(t, got.Requests, 1)
	many := strings.Repeat("x\n", 10)
	got, err = Read(strings.NewReader(many), ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, 10, got.Skipped)
	assert.Len(t, got.Skips, maxSkips, "the reasons are bounded")
}

// TestWildcardsAreNotGranted: a request naming "*" got a 404 (no such
// object), yet a rule of it would grant everything.
func TestWildcardsAreNotGranted(t *testing.T) {
	p := Generate([]Request{
		{Verb: "list", APIGroup: "*", Resource: "*", Code: 404, Decision: Allow},
		{Verb: "create", Resource: "*", Namespace: "a", Code: 404, Decision: Allow},
		{Verb: "get", Path: "/*", Code: 404, Decision: Allow},
		{Verb: "*", Resource: "secrets", Namespace: "a", Decision: Allow},
		{Verb: "get", Resource: "pods", Subresource: "*", Namespace: "a", Name: "p", Decision: Allow},
		{Verb: "get", Resource: "pods", Namespace: "a", Name: "p", Decision: Allow},
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
			ev["annotations"] = map[string]any{decisionAnnotation: decision}
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
		want []Request
	}{
		{"constrained, serviceaccount mode", line(sa, "impersonate:serviceaccount", 200, "allow"), []Request{
			{Verb: "impersonate:serviceaccount", APIGroup: "authentication.k8s.io", Resource: "serviceaccounts",
				Namespace: "web", Name: "app", Code: 200, Decision: Allow},
			{Verb: "impersonate-on:serviceaccount:list", Resource: "pods", Namespace: "web", Code: 200, Decision: Allow},
		}},
		{"constrained, user-info mode, refused for the user", line(alice, "impersonate:user-info", 403, "forbid"),
			[]Request{
				{Verb: "impersonate:user-info", APIGroup: "authentication.k8s.io", Resource: "users", Name: "alice",
					Code: 403, Decision: Allow},
				{Verb: "impersonate:user-info", APIGroup: "authentication.k8s.io", Resource: "groups", Name: "team",
					Code: 403, Decision: Allow},
				{Verb: "impersonate:user-info", APIGroup: "authentication.k8s.io", Resource: "userextras",
					Subresource: "reason", Name: "INC-1", Code: 403, Decision: Allow},
				{Verb: "impersonate-on:user-info:list", Resource: "pods", Namespace: "web", Code: 403, Decision: Allow},
			}},
		{"legacy", line(sa, "", 200, "allow"), []Request{
			{Verb: "impersonate", Resource: "serviceaccounts", Namespace: "web", Name: "app", Code: 200,
				Decision: Allow},
		}},
		{"impersonated, then no decision (429): undecided", line(alice, "", 429, ""), []Request{
			{Verb: "impersonate", Resource: "users", Name: "alice", Code: 429},
			{Verb: "impersonate", Resource: "groups", Name: "team", Code: 429},
			{Verb: "impersonate", APIGroup: "authentication.k8s.io", Resource: "userextras", Subresource: "reason",
				Name: "INC-1", Code: 429},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Read(strings.NewReader(tt.line), ReadOptions{User: robot})
			require.NoError(t, err)
			assert.Equal(t, tt.want, got.Requests)
		})
	}
	got, err := Read(strings.NewReader(line(sa, "impersonate:serviceaccount", 200, "allow")), ReadOptions{User: robot})
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
			"annotations": map[string]any{decisionAnnotation: "allow"}}
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
			l, err := Read(strings.NewReader(strings.Join(tt.lines, "\n")), ReadOptions{User: robot})
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
	p := Generate([]Request{{Verb: "get", Resource: "secrets", Namespace: "a", Name: "x", Decision: Allow},
		{Verb: "get", Resource: "secrets", Namespace: "a", Name: "y", Decision: Allow}}, PolicyOptions{MaxNames: 1})
	assert.Equal(t, []Cell{{Namespace: "a", Verb: "get", Resource: "secrets"}}, p.Widened,
		"--max-names widening is the user's word, and said")
}

// TestRules of the small readers: what a verb is, what an answer shows,
// which groups the server adds, and the verbs' order.
func TestSmallRules(t *testing.T) {
	for v, want := range map[string]bool{"get": true, "approve": true, "z": true, "impersonate-on:user-info:get": true,
		strings.Repeat("a", 64): true, strings.Repeat("a", 65): false, "Get": false, "a1": false, "": false,
		"{": false, "`": false, "get{": false, "get`": false, "*": true} {
		assert.Equal(t, want, isVerb(v), "%q", v)
	}
	for code, want := range map[int]Decision{199: Undecided, 200: Allow, 201: Allow, 299: Allow, 300: Undecided,
		101: Allow, 304: Allow, 400: Undecided, 401: Forbid, 403: Forbid, 404: Allow, 429: Undecided, 500: Undecided,
		502: Undecided, 0: Undecided} {
		assert.Equal(t, want, DecisionOf(code), "%d", code)
	}
	for _, tt := range []struct {
		user, group string
		want        bool
	}{
		{"system:node:n1", "system:nodes", true},
		{"alice", "system:nodes", false},
		{"alice", "system:authenticated", true},
		{"system:anonymous", "system:unauthenticated", true},
		{"alice", "system:unauthenticated", false},
		{"system:serviceaccount:ns:sa", "system:serviceaccounts:ns", true},
		{"system:serviceaccount:ns:sa", "system:serviceaccounts:other", false},
		{"alice", "system:serviceaccounts", false},
	} {
		assert.Equal(t, tt.want, addedByServer(tt.user, tt.group), "%s %s", tt.user, tt.group)
	}
	p := Generate([]Request{
		{Verb: "delete", Resource: "pods", Namespace: "a", Decision: Allow},
		{Verb: "list", Resource: "pods", Namespace: "a", Decision: Allow},
		{Verb: "impersonate", Resource: "pods", Namespace: "a", Decision: Allow},
		{Verb: "bind", Resource: "pods", Namespace: "a", Decision: Allow},
		{Verb: "get", Resource: "pods", Namespace: "a", Decision: Allow},
	}, PolicyOptions{})
	require.Len(t, p.Roles, 1)
	assert.Equal(t, []string{"get", "list", "delete", "bind", "impersonate"}, p.Roles[0].Rules[0].Verbs,
		"kubectl's order, then the others by name")
}
