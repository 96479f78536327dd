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
	}, "\n")
	got, err := Read(strings.NewReader(log), ReadOptions{User: "alice"})
	require.NoError(t, err)
	assert.Equal(t, []Request{
		{User: "alice", Verb: "list", Resource: "pods", Namespace: "a", Code: 200},
		{User: "alice", Verb: "watch", Resource: "pods", Namespace: "a", Code: 200},
		{User: "alice", Verb: "get", Resource: "pods", Subresource: "log", Namespace: "a", Name: "p", Code: 200},
		{User: "alice", Verb: "create", Resource: "configmaps", Namespace: "a", Code: 201},
		{User: "alice", Verb: "delete", Resource: "secrets", Namespace: "b", Name: "s", Code: 403, Refused: true},
		{User: "alice", Verb: "create", Resource: "pods", Namespace: "a", Code: 403},
		{User: "alice", Verb: "get", Path: "/version", Code: 200},
		{User: "alice", Verb: "get", Resource: "pods", Namespace: "c", Name: "x", Code: 200},
	}, got)

	got, err = Read(strings.NewReader(log), ReadOptions{User: "admin"})
	require.NoError(t, err)
	assert.Equal(t, []Request{{Verb: "impersonate", Resource: "users", Name: "alice"},
		{Verb: "impersonate", Resource: "groups", Name: "team"}}, got, "admin's own part: the impersonation")

	for _, bad := range []string{"not json", `{"kind":"Pod","apiVersion":"v1"}`} {
		_, err := Read(strings.NewReader(event("1", "ResponseComplete", "a", "", "get", "/", "", 200, "")+"\n"+bad),
			ReadOptions{})
		assert.ErrorContains(t, err, "line 2 ", bad)
	}
}

func TestRecordedEventsReadBack(t *testing.T) {
	at := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	reqs := []Request{
		{Verb: "impersonate", Resource: "users", Name: "bob", Code: 200},
		{Verb: "get", APIGroup: "apps", Resource: "deployments", Subresource: "scale", Namespace: "a", Name: "d",
			Code: 200},
		{Verb: "list", Resource: "secrets", Namespace: "a", Code: 403, Refused: true},
		{Verb: "get", Path: "/metrics", Code: 200},
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
	assert.Equal(t, reqs, got, "the request sent as bob is bob's")
}

func TestGenerate(t *testing.T) {
	sub := &rbacv1.Subject{Kind: "User", Name: "robot"}
	reqs := []Request{
		{Verb: "get", Path: "/api"}, {Verb: "get", Path: "/apis/apps/v1"}, {Verb: "get", Path: "/version"},
		{Verb: "get", Resource: "configmaps", Namespace: "a", Name: "one"},
		{Verb: "get", Resource: "configmaps", Namespace: "a", Name: "two"},
		{Verb: "update", Resource: "configmaps", Namespace: "a", Name: "one"},
		{Verb: "list", Resource: "pods", Namespace: "a"},
		{Verb: "watch", Resource: "pods", Namespace: "a"},
		{Verb: "get", Resource: "pods", Namespace: "a", Name: "web"},
		{Verb: "get", Resource: "pods", Subresource: "log", Namespace: "a", Name: "web"},
		{Verb: "create", Resource: "pods", Subresource: "exec", Namespace: "a", Name: "web"},
		{Verb: "delete", Resource: "secrets", Namespace: "a", Name: "s", Refused: true, Code: 403},
		{Verb: "get", Resource: "secrets", Namespace: "b", Name: "s1"}, {Verb: "get", Resource: "secrets",
			Namespace: "b", Name: "s2"}, {Verb: "get", Resource: "secrets", Namespace: "b", Name: "s3"},
		{Verb: "list", Resource: "nodes"},
		{Verb: "get", Path: "/metrics"},
		{Verb: "impersonate", Resource: "users", Name: "bob"},
	}
	p := Generate(reqs, PolicyOptions{Name: "ci", Subject: sub, MaxNames: 2})
	require.Len(t, p.Roles, 2)
	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"one"},
			Verbs: []string{"update"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"one", "two"},
			Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"pods", "pods/log"}, ResourceNames: []string{"web"},
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
	assert.Len(t, p.Used, 12)
	var esc []string
	for _, e := range p.Escalations {
		esc = append(esc, Cell{Namespace: e.Namespace, Verb: e.Verb, Resource: e.Resource}.String())
	}
	assert.Equal(t, []string{"impersonate users", "create pods/exec in a", "get secrets in b"}, esc)

	none := Generate(nil, PolicyOptions{})
	assert.Empty(t, none.Roles)
	assert.Nil(t, none.ClusterRole)
}

// TestReadProxyLog: the impersonating proxy's audit lines are read as the
// audit log's: the request's attributes as the user, a 403 refused (the
// proxy cannot tell admission's), a line refused before authentication
// no one's, a line without the attributes an error.
func TestReadProxyLog(t *testing.T) {
	log := strings.Join([]string{
		`{"time":"t","remote":"127.0.0.1:1","verb":"GET","path":"/api/v1/namespaces/a/pods","code":200,"latencyMs":1,` +
			`"user":"alice","groups":["dev"],"request":{"verb":"watch","resource":"pods","namespace":"a","code":0}}`,
		`{"time":"t","remote":"127.0.0.1:1","verb":"DELETE","path":"/api/v1/namespaces/a/secrets/s","code":403,` +
			`"user":"alice","request":{"verb":"delete","resource":"secrets","namespace":"a","name":"s","code":0}}`,
		`{"time":"t","remote":"127.0.0.1:1","verb":"GET","path":"/api","code":401,"reason":"token refused"}`,
		`{"time":"t","verb":"GET","path":"/api","code":200,"user":"bob","request":{"verb":"get","path":"/api"}}`,
	}, "\n")
	got, err := Read(strings.NewReader(log), ReadOptions{User: "alice"})
	require.NoError(t, err)
	assert.Equal(t, []Request{
		{User: "alice", Verb: "watch", Resource: "pods", Namespace: "a", Code: 200},
		{User: "alice", Verb: "delete", Resource: "secrets", Namespace: "a", Name: "s", Code: 403, Refused: true},
	}, got)
	_, err = Read(strings.NewReader(`{"verb":"GET","path":"/api","code":200,"user":"bob"}`), ReadOptions{User: "bob"})
	assert.ErrorContains(t, err, "line 1: a proxy's line without the request's attributes")
}

// TestReadRefusesWhatNoServerAuthorizes: a log someone else wrote must not
// put a newline (a YAML document of its own), a control or a bidirectional
// override into what kubectl applies or the comments above it.
func TestReadRefusesWhatNoServerAuthorizes(t *testing.T) {
	for _, tt := range []struct{ ref, verb, want string }{
		{"|configmaps||a\napiVersion: v1\n---\n#|", "get", "the namespace"},
		{"|configmaps||A|", "get", "the namespace"},
		{"ex ample|widgets||a|", "get", "the API group"},
		{"|configmaps||a|x\u202ey", "get", "the name"},
		{"|config\u001bmaps||a|", "get", "the resource"},
		{"|configmaps||a|", "get\nlist", "the verb"},
	} {
		_, err := Read(strings.NewReader(event("1", "ResponseComplete", "a", "", tt.verb, "/x", tt.ref, 200, "allow")),
			ReadOptions{})
		assert.ErrorContains(t, err, "line 1: "+tt.want, tt.ref)
	}
	_, err := Read(strings.NewReader(`{"verb":"GET","code":200,"user":"bob","request":{"verb":"get",`+
		`"resource":"pods","namespace":"a\nb"}}`), ReadOptions{User: "bob"})
	assert.ErrorContains(t, err, "line 1: the namespace", "the proxy's lines too")
}

// TestWildcardsAreNotGranted: a request naming "*" got a 404 (no such
// object), yet a rule of it would grant everything.
func TestWildcardsAreNotGranted(t *testing.T) {
	p := Generate([]Request{
		{Verb: "list", APIGroup: "*", Resource: "*", Code: 404},
		{Verb: "create", Resource: "*", Namespace: "a", Code: 404},
		{Verb: "get", Path: "/*", Code: 404},
		{Verb: "*", Resource: "secrets", Namespace: "a"},
		{Verb: "get", Resource: "pods", Subresource: "*", Namespace: "a", Name: "p"},
		{Verb: "get", Resource: "pods", Namespace: "a", Name: "p"},
	}, PolicyOptions{})
	assert.Len(t, p.Wildcards, 5)
	assert.Nil(t, p.ClusterRole)
	require.Len(t, p.Roles, 1)
	assert.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"},
		ResourceNames: []string{"p"}, Verbs: []string{"get"}}}, p.Roles[0].Rules)
}

// TestUnansweredIsRefused: record writes "forbid" on a request that got no
// answer; it is read as refused whatever its code.
func TestUnansweredIsRefused(t *testing.T) {
	b, err := json.Marshal(Request{Verb: "deletecollection", Resource: "secrets", Namespace: "a", Code: 502,
		Refused: true}.Event("/api/v1/namespaces/a/secrets", "", time.Now()))
	require.NoError(t, err)
	got, err := Read(bytes.NewReader(b), ReadOptions{})
	require.NoError(t, err)
	assert.True(t, got[0].Refused)
}
