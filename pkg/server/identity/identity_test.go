package identity

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
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
		{name: "one group more than 32 times", headers: append([][2]string{{"Impersonate-User", "bob"}}, sameGroup(MaxValues)...), wantErr: "over 32"},
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
