package proxy

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/proxyattacks"
)

// allowOnly is an authorizer that allows exactly its specs (by caller and
// resource attributes), and records every question.
type allowOnly struct {
	mu      sync.Mutex
	allowed []authzv1.SubjectAccessReviewSpec
	asked   []authzv1.SubjectAccessReviewSpec
}

func (a *allowOnly) Authorize(_ context.Context, spec authzv1.SubjectAccessReviewSpec) (bool, string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, spec)
	for _, s := range a.allowed {
		if s.User == spec.User && *s.ResourceAttributes == *spec.ResourceAttributes {
			return true, "", nil
		}
	}
	return false, "stand-in authorizer: no", nil
}

func TestReadCallerImpersonation(t *testing.T) {
	for _, tt := range []struct {
		name    string
		headers [][2]string
		want    *callerImpersonation
		wantErr string
	}{
		{name: "none", headers: [][2]string{{"Accept", "*/*"}}},
		{name: "user", headers: [][2]string{{"impersonate-user", "bob"}}, want: &callerImpersonation{user: "bob"}},
		{name: "kubectl --as --as-group --as-uid, extra", headers: [][2]string{{"Impersonate-User", "bob"}, {"Impersonate-Group", "a"}, {"Impersonate-Group", "b"},
			{"Impersonate-Uid", "42"}, {"Impersonate-Extra-Example.com%2fTenant", "t1"}},
			want: &callerImpersonation{user: "bob", uid: "42", groups: []string{"a", "b"}, extra: map[string][]string{"example.com/tenant": {"t1"}}}},
		{name: "no user", headers: [][2]string{{"Impersonate-Group", "a"}}, wantErr: "without Impersonate-User"},
		{name: "two users", headers: [][2]string{{"Impersonate-User", "a"}, {"Impersonate-User", "b"}}, wantErr: "once"},
		{name: "empty user", headers: [][2]string{{"Impersonate-User", ""}}, wantErr: "once, not empty"},
		{name: "underscore", headers: [][2]string{{"Impersonate_User", "bob"}}, wantErr: "not a spelling"},
		{name: "the proxy's own extra", headers: [][2]string{{"Impersonate-User", "bob"}, {"Impersonate-Extra-Kubectl-Impersonate.io%2FOriginal-User", "x"}}, wantErr: "the proxy's to set"},
		{name: "repeated groups are one check", headers: [][2]string{{"Impersonate-User", "bob"}, {"Impersonate-Group", "a"}, {"Impersonate-Group", "a"}},
			want: &callerImpersonation{user: "bob", groups: []string{"a"}}},
		{name: "too many groups", headers: append([][2]string{{"Impersonate-User", "bob"}}, manyGroups(MaxImpersonatedValues)...), wantErr: "over 32"},
		{name: "invalid UTF-8", headers: [][2]string{{"Impersonate-User", "bob\xff"}}, wantErr: "not valid UTF-8"},
		// kube-apiserver lowercases the key, then decodes it.
		{name: "an escaped capital stays capital", headers: [][2]string{{"Impersonate-User", "bob"}, {"Impersonate-Extra-Foo%41", "x"}},
			want: &callerImpersonation{user: "bob", extra: map[string][]string{"fooA": {"x"}}}},
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
			got, err := readCallerImpersonation(h)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// The checks are kube-apiserver's impersonation filter's, asked for the
// caller: a service account in its namespace, each group, the UID, each
// extra value as userextras/KEY named VALUE.
func TestCallerImpersonationChecks(t *testing.T) {
	c := &callerImpersonation{user: "system:serviceaccount:team-a:deployer", uid: "42", groups: []string{"g"}, extra: map[string][]string{"scopes": {"s1", "s2"}}}
	caller := &user.DefaultInfo{Name: "alice", Groups: []string{"dev"}}
	var got []authzv1.ResourceAttributes
	for _, s := range c.checks(caller) {
		assert.Equal(t, "alice", s.User, "asked for the caller, never the proxy")
		assert.Equal(t, []string{"dev", "system:authenticated"}, s.Groups, "as kube-apiserver authenticates the caller")
		got = append(got, *s.ResourceAttributes)
	}
	assert.Equal(t, []authzv1.ResourceAttributes{
		{Verb: "impersonate", Resource: "serviceaccounts", Namespace: "team-a", Name: "deployer"},
		{Verb: "impersonate", Resource: "groups", Name: "g"},
		{Verb: "impersonate", Group: "authentication.k8s.io", Resource: "uids", Name: "42"},
		{Verb: "impersonate", Group: "authentication.k8s.io", Resource: "userextras", Subresource: "scopes", Name: "s1"},
		{Verb: "impersonate", Group: "authentication.k8s.io", Resource: "userextras", Subresource: "scopes", Name: "s2"},
	}, got)
	id := c.identity(caller)
	assert.Equal(t, "system:serviceaccount:team-a:deployer", id.GetName())
	assert.Equal(t, []string{"g"}, id.GetGroups())
	assert.Equal(t, []string{"alice"}, id.GetExtra()[OriginalUserExtra])
	sa := (&callerImpersonation{user: "system:serviceaccount:team-a:deployer"}).identity(caller)
	assert.Equal(t, []string{"system:serviceaccounts", "system:serviceaccounts:team-a"}, sa.GetGroups(), "a service account's groups, as kube-apiserver gives them")
}

// TestProxyCallerImpersonationAttacks drives internal/proxyattacks'
// caller-impersonation table in-process: alice may impersonate
// proxyattacks.Impersonable, and the proxy asks the (stand-in) authorizer
// about alice, never about itself.
func TestProxyCallerImpersonationAttacks(t *testing.T) {
	p := newTestProxy(t, structuredConfig, false)
	authz := &allowOnly{allowed: []authzv1.SubjectAccessReviewSpec{{User: "alice@example.com",
		ResourceAttributes: &authzv1.ResourceAttributes{Verb: "impersonate", Resource: "users", Name: proxyattacks.Impersonable}}}}
	p.handler.CallerImpersonation = authz
	attacks, err := proxyattacks.CallerImpersonationTable(p.aliceMinter())
	require.NoError(t, err)
	p.driveAttacks(t, attacks, func(t *testing.T, a proxyattacks.Attack, r *http.Request) {
		if a.As == "" {
			assertForwardedAsAlice(t, r)
			return
		}
		h := r.Header
		assert.Equal(t, []string{a.As}, h.Values("Impersonate-User"))
		assert.Empty(t, h.Values("Impersonate-Group"), "no group asked, none forwarded")
		assert.Empty(t, h.Values("Impersonate-Uid"))
		var original []string
		for name, vs := range h {
			if k, ok := strings.CutPrefix(name, "Impersonate-Extra-"); ok {
				key, err := url.PathUnescape(k)
				require.NoError(t, err)
				assert.Equal(t, OriginalUserExtra, strings.ToLower(key), "the only extra")
				original = vs
			}
		}
		assert.Equal(t, []string{"alice@example.com"}, original, "the caller, for kube-apiserver's audit log")
		assert.Empty(t, h.Get("Authorization"))
	})
	for _, s := range authz.asked {
		assert.Equal(t, "alice@example.com", s.User, "every question is about the caller")
	}
	assert.Contains(t, p.audit.String(), `"originalUser":"alice@example.com"`, "the proxy's audit line names the caller")
}

func manyGroups(n int) [][2]string {
	var out [][2]string
	for i := range n {
		out = append(out, [2]string{"Impersonate-Group", fmt.Sprintf("g%d", i)})
	}
	return out
}
