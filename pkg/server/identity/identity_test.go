package identity

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func TestReadHeaders(t *testing.T) {
	for _, tt := range []struct {
		name    string
		headers [][2]string
		want    *Asked
		wantErr string
	}{
		{name: "none", headers: [][2]string{{"Accept", "*/*"}}},
		{name: "user", headers: [][2]string{{"impersonate-user", "bob"}}, want: &Asked{user: "bob"}},
		{name: "kubectl --as --as-group --as-uid, extra", headers: [][2]string{{"Impersonate-User", "bob"}, {"Impersonate-Group", "a"}, {"Impersonate-Group", "b"},
			{"Impersonate-Uid", "42"}, {"Impersonate-Extra-Example.com%2fTenant", "t1"}},
			want: &Asked{user: "bob", uid: "42", groups: []string{"a", "b"}, extra: map[string][]string{"example.com/tenant": {"t1"}}}},
		{name: "no user", headers: [][2]string{{"Impersonate-Group", "a"}}, wantErr: "without Impersonate-User"},
		{name: "two users", headers: [][2]string{{"Impersonate-User", "a"}, {"Impersonate-User", "b"}}, wantErr: "once"},
		{name: "empty user", headers: [][2]string{{"Impersonate-User", ""}}, wantErr: "once, not empty"},
		{name: "underscore", headers: [][2]string{{"Impersonate_User", "bob"}}, wantErr: "not a spelling"},
		{name: "the proxy's own extra", headers: [][2]string{{"Impersonate-User", "bob"}, {"Impersonate-Extra-Kubectl-Impersonate.io%2FOriginal-User", "x"}}, wantErr: "the proxy's to set"},
		{name: "repeated groups count, as kube-apiserver asks about each", headers: [][2]string{{"Impersonate-User", "bob"}, {"Impersonate-Group", "a"}, {"Impersonate-Group", "a"}},
			want: &Asked{user: "bob", groups: []string{"a", "a"}}},
		{name: "one group more than 32 times", headers: append([][2]string{{"Impersonate-User", "bob"}}, sameGroup(MaxValues)...),
			wantErr: "32 groups and extra values beside the user, over 32 in all"},
		{name: "the user and 31 groups: 32 values, the most", headers: append([][2]string{{"Impersonate-User", "bob"}}, sameGroup(MaxValues-1)...),
			want: &Asked{user: "bob", groups: slices.Repeat([]string{"devs"}, MaxValues-1)}},
		{name: "extra values count too", headers: append([][2]string{{"Impersonate-User", "bob"}, {"Impersonate-Extra-A", "1"}, {"Impersonate-Extra-A", "2"}},
			sameGroup(MaxValues-2)...), wantErr: "32 groups and extra values beside the user, over 32 in all"},
		{name: "the proxy's own extra with an escaped capital", headers: [][2]string{{"Impersonate-User", "bob"}, {"Impersonate-Extra-Kubectl-Impersonate.io%2FOriginal-%55ser", "x"}}, wantErr: "the proxy's to set"},
		{name: "too many groups", headers: append([][2]string{{"Impersonate-User", "bob"}}, manyGroups(MaxValues)...), wantErr: "over 32"},
		{name: "invalid UTF-8", headers: [][2]string{{"Impersonate-User", "bob\xff"}}, wantErr: "not valid UTF-8"},
		// kube-apiserver lowercases the key, then decodes it: an escaped
		// capital stays, and would arrive upstream lowercased.
		{name: "an escaped capital in an extra key", headers: [][2]string{{"Impersonate-User", "bob"}, {"Impersonate-Extra-Foo%41", "x"}}, wantErr: "capital letters"},
		{name: "unknown impersonation header", headers: [][2]string{{"Impersonate-User", "bob"}, {"Impersonate-Whatever", "x"}}, wantErr: "not an impersonation header"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for _, kv := range tt.headers {
				if strings.Contains(kv[0], "_") {
					h[kv[0]] = append(h[kv[0]], kv[1]) // as a raw request keeps it
				} else {
					h.Add(kv[0], kv[1])
				}
			}
			got, err := ReadHeaders(h)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// ReviewSpec puts a question as kube-apiserver's webhook authorizer does.
func TestReviewSpec(t *testing.T) {
	u := &user.DefaultInfo{Name: "alice", UID: "1", Groups: []string{"dev"}, Extra: map[string][]string{"k": {"v"}}}
	fs, err := fields.ParseSelector("spec.nodeName=n1,metadata.name!=x")
	require.NoError(t, err)
	ls, err := labels.Parse("app in (a,b),!gone,tier")
	require.NoError(t, err)
	lreq, _ := ls.Requirements()
	got := ReviewSpec(&authorizer.AttributesRecord{User: u, Verb: "list", APIGroup: "apps", APIVersion: "v1", Resource: "deployments", Namespace: "ns",
		ResourceRequest: true, FieldSelectorRequirements: fs.Requirements(), LabelSelectorRequirements: lreq})
	assert.Equal(t, authzv1.SubjectAccessReviewSpec{User: "alice", UID: "1", Groups: []string{"dev"}, Extra: map[string]authzv1.ExtraValue{"k": {"v"}},
		ResourceAttributes: &authzv1.ResourceAttributes{Namespace: "ns", Verb: "list", Group: "apps", Version: "v1", Resource: "deployments",
			FieldSelector: &authzv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{
				{Key: "metadata.name", Operator: metav1.FieldSelectorOpNotIn, Values: []string{"x"}}, {Key: "spec.nodeName", Operator: metav1.FieldSelectorOpIn, Values: []string{"n1"}}}},
			LabelSelector: &authzv1.LabelSelectorAttributes{Requirements: []metav1.LabelSelectorRequirement{
				{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}, {Key: "gone", Operator: metav1.LabelSelectorOpDoesNotExist},
				{Key: "tier", Operator: metav1.LabelSelectorOpExists}}}}}, got)
	plain := ReviewSpec(&authorizer.AttributesRecord{User: u, Verb: "list", Resource: "pods", Namespace: "ns", ResourceRequest: true,
		FieldSelectorRequirements: fields.Requirements{{Operator: selection.Exists, Field: "spec.nodeName"}},
		LabelSelectorRequirements: unconvertible(t)})
	assert.Equal(t, &authzv1.ResourceAttributes{Namespace: "ns", Verb: "list", Resource: "pods"}, plain.ResourceAttributes,
		"no selector when none converts")
	nr := ReviewSpec(&authorizer.AttributesRecord{User: u, Verb: "get", Path: "/apis"})
	assert.Equal(t, &authzv1.NonResourceAttributes{Path: "/apis", Verb: "get"}, nr.NonResourceAttributes)
}

func manyGroups(n int) [][2]string {
	var out [][2]string
	for i := range n {
		out = append(out, [2]string{"Impersonate-Group", fmt.Sprintf("g%d", i)})
	}
	return out
}

func sameGroup(n int) [][2]string {
	var out [][2]string
	for range n {
		out = append(out, [2]string{"Impersonate-Group", "devs"})
	}
	return out
}

// unconvertible is a label selector the webhook authorizer leaves out
// (greater than): it asks for more, never less.
func unconvertible(t *testing.T) labels.Requirements {
	r, err := labels.NewRequirement("size", selection.GreaterThan, []string{"3"})
	require.NoError(t, err)
	return labels.Requirements{*r}
}

// Forwardable refuses what a token could not produce or HTTP/1.1 would
// change, and system: identities unless allowed, in every field.
func TestForwardable(t *testing.T) {
	for _, tt := range []struct {
		name        string
		u           user.DefaultInfo
		allowSystem bool
		wantErr     string
	}{
		{name: "plain", u: user.DefaultInfo{Name: "alice", UID: "1", Groups: []string{"dev"}, Extra: map[string][]string{"k": {"v"}}}},
		{name: "system user", u: user.DefaultInfo{Name: "system:admin"}, wantErr: `username "system:admin" is a system: identity`},
		{name: "system user allowed", u: user.DefaultInfo{Name: "system:admin", Groups: []string{"system:masters"}}, allowSystem: true},
		{name: "system group", u: user.DefaultInfo{Name: "alice", Groups: []string{"dev", "system:masters"}}, wantErr: `group "system:masters" is a system: identity`},
		{name: "leading space in the user", u: user.DefaultInfo{Name: " alice"}, wantErr: "leading or trailing white space"},
		{name: "trailing tab in a group", u: user.DefaultInfo{Name: "alice", Groups: []string{"dev\t"}}, wantErr: `group "dev\t" has leading`},
		{name: "control character in the uid", u: user.DefaultInfo{Name: "alice", UID: "1\x002"}, wantErr: "uid"},
		{name: "control character in an extra key", u: user.DefaultInfo{Name: "alice", Extra: map[string][]string{"k\n": {"v"}}}, wantErr: "extra key"},
		{name: "space around an extra value", u: user.DefaultInfo{Name: "alice", Extra: map[string][]string{"k": {"ok", " v"}}}, wantErr: "extra value"},
		{name: "space inside is kept", u: user.DefaultInfo{Name: "Alice Smith", Groups: []string{"a b"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := Forwardable(&tt.u, tt.allowSystem)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.wantErr)
		})
	}
}

// ForwardedAs drops the system:authenticated the filter added (kept when
// asked for), and the caller is the only OriginalUserExtra, whatever the
// caller's extras spell.
func TestForwardedAs(t *testing.T) {
	caller := &user.DefaultInfo{Name: "alice"}
	got := &user.DefaultInfo{Name: "bob", UID: "7", Groups: []string{"dev", user.AllAuthenticated},
		Extra: map[string][]string{"Kubectl-Impersonate.io/Original-User": {"mallory"}, "k": {"v"}}}
	want := &user.DefaultInfo{Name: "bob", UID: "7", Groups: []string{"dev"},
		Extra: map[string][]string{OriginalUserExtra: {"alice"}, "k": {"v"}}}
	assert.Equal(t, want, ForwardedAs(got, caller, &Asked{user: "bob", groups: []string{"dev"}}))
	want.Groups = []string{"dev", user.AllAuthenticated}
	assert.Equal(t, want, ForwardedAs(got, caller, &Asked{user: "bob", groups: []string{"dev", user.AllAuthenticated}}),
		"asked for, it is forwarded")
	assert.Equal(t, []string{"dev"}, got.Groups[:1], "the filter's identity is not changed")
}

// WithAuthenticated adds system:authenticated once, as kube-apiserver's
// authenticator does.
func TestWithAuthenticated(t *testing.T) {
	u := &user.DefaultInfo{Name: "alice", UID: "1", Groups: []string{"dev"}, Extra: map[string][]string{"k": {"v"}}}
	assert.Equal(t, &user.DefaultInfo{Name: "alice", UID: "1", Groups: []string{"dev", user.AllAuthenticated},
		Extra: map[string][]string{"k": {"v"}}}, WithAuthenticated(u))
	assert.Equal(t, []string{"dev"}, u.Groups, "the caller is not changed")
	already := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	assert.Same(t, already, WithAuthenticated(already))
}

// SubjectAccessReviewer posts the question and reads kube-apiserver's
// answer: allowed, denied, neither; anything else is no opinion with an
// error that says what the proxy's credential needs.
func TestSubjectAccessReviewer(t *testing.T) {
	for _, tt := range []struct {
		name    string
		code    int
		body    string
		want    authorizer.Decision
		reason  string
		wantErr string
	}{
		{name: "allowed", code: 201, body: `{"status":{"allowed":true,"reason":"rbac"}}`, want: authorizer.DecisionAllow, reason: "rbac"},
		{name: "denied", code: 201, body: `{"status":{"allowed":false,"denied":true,"reason":"webhook"}}`, want: authorizer.DecisionDeny, reason: "webhook"},
		{name: "denied wins over allowed", code: 200, body: `{"status":{"allowed":true,"denied":true}}`, want: authorizer.DecisionDeny},
		{name: "no opinion", code: 201, body: `{"status":{"allowed":false,"reason":"none"}}`, want: authorizer.DecisionNoOpinion, reason: "none"},
		{name: "forbidden to ask", code: 403, body: `{}`, want: authorizer.DecisionNoOpinion, wantErr: "needs create on subjectaccessreviews"},
		{name: "not JSON", code: 201, body: `<html>`, want: authorizer.DecisionNoOpinion, wantErr: "reading the SubjectAccessReview"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got authzv1.SubjectAccessReview
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				assert.Equal(t, "/prefix/apis/authorization.k8s.io/v1/subjectaccessreviews", r.URL.Path)
				assert.NoError(t, json.NewDecoder(r.Body).Decode(&got))
				w.WriteHeader(tt.code)
				_, _ = io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			u, err := url.Parse(srv.URL + "/prefix")
			require.NoError(t, err)
			d, reason, err := SubjectAccessReviewer{Upstream: u, RT: http.DefaultTransport}.Authorize(context.Background(),
				&authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "alice"}, Verb: "impersonate", Resource: "users",
					Name: "bob", ResourceRequest: true})
			assert.Equal(t, tt.want, d)
			assert.Equal(t, tt.reason, reason)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
			} else {
				assert.NoError(t, err)
			}
			assert.Equal(t, "alice", got.Spec.User, "the question is about the caller")
			assert.Equal(t, "bob", got.Spec.ResourceAttributes.Name)
		})
	}
}
