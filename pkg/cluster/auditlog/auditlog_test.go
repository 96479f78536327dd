package auditlog

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		ev["annotations"] = map[string]any{DecisionAnnotation: decision}
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
		{User: "alice", Verb: "create", Resource: "configmaps", Namespace: "a", Created: "made", Code: 201, Decision: Allow},
		{User: "alice", Verb: "delete", Resource: "secrets", Namespace: "b", Name: "s", Code: 403, Decision: Forbid},
		{User: "alice", Verb: "create", Resource: "pods", Namespace: "a", Created: "p", Code: 403, Decision: Allow},
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

// TestSmallRules of the readers: what a verb is, what an answer shows,
// which groups the server adds.
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
}

// withExtra is an event line with extras on its user (who) or its
// impersonated user.
func withExtra(t *testing.T, line, who string, extra map[string][]string) string {
	t.Helper()
	var ev map[string]any
	require.NoError(t, json.Unmarshal([]byte(line), &ev))
	ev[who].(map[string]any)["extra"] = extra
	b, err := json.Marshal(ev)
	require.NoError(t, err)
	return string(b)
}

// ReadOptions.Grant (sudo report) selects the requests made under one sudo
// grant, whoever made them: in kube-apiserver's log, the identity the
// request was authorized as (the impersonated one when there is one, as
// the proxy and direct mode send it) carries the grant's extra among its
// values; in the proxy's log, the line names the grant. A grant named by a
// user the request did not act as, another grant, or none: not read.
func TestReadGrant(t *testing.T) {
	const grant = "payments/sudo-x7k2p"
	uri, ref := "/api/v1/namespaces/payments/secrets", "|secrets||payments|"
	under := map[string][]string{"kubectl-impersonate.io/sudo-grant": {grant}}
	for _, tt := range []struct {
		name string
		line string
		want []string // the users of the requests read
	}{
		{"the proxy's elevation: the impersonated user carries it",
			withExtra(t, event("1", "ResponseComplete", "proxy", "alice", "list", uri, ref, 200, "allow"),
				"impersonatedUser", under), []string{"alice"}},
		{"among other values", withExtra(t, event("2", "ResponseComplete", "proxy", "alice", "list", uri, ref, 200,
			"allow"), "impersonatedUser", map[string][]string{"kubectl-impersonate.io/sudo-grant": {"a/b", grant}}),
			[]string{"alice"}},
		{"another grant", withExtra(t, event("3", "ResponseComplete", "proxy", "alice", "list", uri, ref, 200,
			"allow"), "impersonatedUser", map[string][]string{"kubectl-impersonate.io/sudo-grant": {"payments/other"}}),
			nil},
		{"no grant", event("4", "ResponseComplete", "alice", "", "list", uri, ref, 200, "allow"), nil},
		{"not impersonated: the user carries it",
			withExtra(t, event("5", "ResponseComplete", "alice", "", "list", uri, ref, 200, "allow"), "user", under),
			[]string{"alice"}},
		{"the caller carries it, not the identity it acted as",
			withExtra(t, event("6", "ResponseComplete", "alice", "bob", "list", uri, ref, 200, "allow"), "user", under),
			nil},
		{"the proxy's line under it", `{"time":"t","verb":"GET","path":"` + uri + `","code":200,"answered":true,` +
			`"user":"alice","grant":"` + grant + `","request":{"verb":"list","resource":"secrets","namespace":"payments"}}`,
			[]string{"alice"}},
		{"the proxy's line under another", `{"time":"t","verb":"GET","path":"` + uri + `","code":200,` +
			`"answered":true,"user":"alice","grant":"payments/other","request":{"verb":"list","resource":"secrets",` +
			`"namespace":"payments"}}`, nil},
		{"the proxy's line under none", `{"time":"t","verb":"GET","path":"` + uri + `","code":200,"answered":true,` +
			`"user":"alice","request":{"verb":"list","resource":"secrets","namespace":"payments"}}`, nil},
	} {
		got, err := Read(strings.NewReader(tt.line), ReadOptions{Grant: grant})
		require.NoError(t, err, tt.name)
		var users []string
		for _, r := range got.Requests {
			users = append(users, r.User)
		}
		assert.Equal(t, tt.want, users, tt.name)
		assert.Zero(t, got.Skipped, "%s: %v", tt.name, got.Skips)
	}
}

// A reader keeps what it selects and nothing of the rest: a cluster's log
// of 50,000 other requests (two stages each, streaming ones among them)
// and a proxy's log of as many leave no entry behind, and the one request selected is read whole.
func TestReadKeepsOnlyWhatItSelects(t *testing.T) {
	rr := &reader{o: ReadOptions{Grant: "payments/sudo-x"}, byID: map[string]*entry{}, seg: segment{first: 1}}
	uri, ref := "/api/v1/namespaces/payments/pods?watch=1", "|pods||payments|"
	for i := range 50000 {
		id := strconv.Itoa(i)
		rr.line(2*i+1, []byte(event(id, "ResponseStarted", "bob", "", "watch", uri, ref, 200, "allow")))
		rr.line(2*i+2, []byte(event(id, "ResponseComplete", "bob", "", "watch", uri, ref, 200, "allow")))
		rr.line(100000+i, []byte(`{"time":"t","verb":"GET","path":"`+uri+`","code":200,"answered":true,`+
			`"user":"bob","request":{"verb":"watch","resource":"pods","namespace":"payments"}}`))
	}
	assert.Zero(t, len(rr.byID), "entries kept by audit ID")
	assert.Zero(t, len(rr.order), "entries kept in order")
	under := withExtra(t, event("x", "ResponseComplete", "proxy", "alice", "watch", uri, ref, 200, "allow"),
		"impersonatedUser", map[string][]string{"kubectl-impersonate.io/sudo-grant": {"payments/sudo-x"}})
	rr.line(150001, []byte(under))
	require.Equal(t, 1, len(rr.order))
	assert.Equal(t, "alice", rr.order[0].reqs[0].User)
}
