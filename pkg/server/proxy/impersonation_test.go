package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/proxyattacks"
	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testissuer"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/identity"
)

// allowOnly is an authorizer that allows exactly its questions (the
// SubjectAccessReview each would be: caller and resource attributes, the
// API version aside), and records every question as that review.
type allowOnly struct {
	mu      sync.Mutex
	allowed []authzv1.SubjectAccessReviewSpec
	asked   []authzv1.SubjectAccessReviewSpec
}

func (a *allowOnly) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	spec := identity.ReviewSpec(attrs)
	a.asked = append(a.asked, spec)
	if spec.ResourceAttributes == nil {
		return authorizer.DecisionNoOpinion, "stand-in authorizer: no", nil
	}
	ra := *spec.ResourceAttributes
	ra.Version = ""
	for _, s := range a.allowed {
		if s.User == spec.User && *s.ResourceAttributes == ra {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, "stand-in authorizer: no", nil
}

// The questions are kube-apiserver's impersonation filter's, asked about
// the caller as kube-apiserver authenticates it (with
// system:authenticated), never about the proxy: the classic filter asks
// the impersonate verb on the service account in its namespace, each
// group, each extra value and the UID; the constrained one first asks
// impersonate-on:<mode>:<verb> on the request itself.
func TestCallerImpersonationQuestions(t *testing.T) {
	for _, tt := range []struct {
		name        string
		constrained bool
		headers     [][2]string
		want        []authzv1.ResourceAttributes
		wantGroups  []string
	}{
		{name: "classic (1.35): a service account, a group, an extra, a UID", headers: [][2]string{{"Impersonate-User", "system:serviceaccount:team-a:deployer"}, {"Impersonate-Group", "g"},
			{"Impersonate-Uid", "42"}, {"Impersonate-Extra-Example.com%2fscopes", "s1"}},
			want: []authzv1.ResourceAttributes{
				{Verb: "impersonate", Resource: "serviceaccounts", Namespace: "team-a", Name: "deployer"},
				{Verb: "impersonate", Resource: "groups", Name: "g"},
				{Verb: "impersonate", Group: "authentication.k8s.io", Version: "v1", Resource: "userextras", Subresource: "example.com/scopes", Name: "s1"},
				{Verb: "impersonate", Group: "authentication.k8s.io", Version: "v1", Resource: "uids", Name: "42"},
			}, wantGroups: []string{"g"}},
		{name: "constrained (1.36+): a user, by user-info", constrained: true, headers: [][2]string{{"Impersonate-User", "bob"}},
			want: []authzv1.ResourceAttributes{
				{Verb: "impersonate-on:user-info:list", Version: "v1", Resource: "pods", Namespace: "team-a"},
				{Verb: "impersonate:user-info", Group: "authentication.k8s.io", Version: "v1", Resource: "users", Name: "bob"},
			}},
		// A service account with groups is no constrained mode's: the
		// classic questions, in the constrained filter's order.
		{name: "constrained (1.36+): a service account with a group falls back to the classic verb", constrained: true,
			headers: [][2]string{{"Impersonate-User", "system:serviceaccount:team-a:deployer"}, {"Impersonate-Group", "g"}},
			want: []authzv1.ResourceAttributes{
				{Verb: "impersonate", Version: "v1", Resource: "serviceaccounts", Namespace: "team-a", Name: "deployer"},
				{Verb: "impersonate", Version: "v1", Resource: "groups", Name: "g"},
			}, wantGroups: []string{"g"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newTestProxy(t, structuredConfig, true)
			authz := &allowOnly{}
			for _, ra := range tt.want {
				ra.Version = ""
				authz.allowed = append(authz.allowed, authzv1.SubjectAccessReviewSpec{User: "alice@example.com", ResourceAttributes: &ra})
			}
			p.handler.CallerImpersonation, p.handler.ConstrainedImpersonation = authz, tt.constrained
			req, err := http.NewRequest(http.MethodGet, p.url+"/api/v1/namespaces/team-a/pods", nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+p.mint(t, map[string]any{"email": "alice@example.com"}, testissuer.Valid))
			for _, kv := range tt.headers {
				req.Header.Add(kv[0], kv[1])
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			_ = resp.Body.Close()
			assert.Equal(t, 200, resp.StatusCode)
			var got []authzv1.ResourceAttributes
			for _, s := range authz.asked {
				assert.Equal(t, "alice@example.com", s.User, "asked for the caller, never the proxy")
				assert.Contains(t, s.Groups, "system:authenticated", "as kube-apiserver authenticates the caller")
				got = append(got, *s.ResourceAttributes)
			}
			assert.Equal(t, tt.want, got, "kube-apiserver's questions, in its order")
			seen := p.upstream.take()
			require.Len(t, seen, 1)
			assert.Equal(t, tt.headers[0][1], seen[0].Header.Get("Impersonate-User"))
			assert.Equal(t, tt.wantGroups, seen[0].Header.Values("Impersonate-Group"), "system:authenticated is kube-apiserver's to add")
			assert.Equal(t, []string{"alice@example.com"}, seen[0].Header.Values("Impersonate-Extra-Kubectl-Impersonate.io%2foriginal-User"))
		})
	}
}

// A refusal during discovery reads as kube-apiserver's reason in kubectl:
// text where client-go decodes no Status, a Status elsewhere.
func TestCallerImpersonationRefusals(t *testing.T) {
	p := newTestProxy(t, structuredConfig, false)
	p.handler.CallerImpersonation = &allowOnly{}
	token := p.mint(t, map[string]any{"email": "alice@example.com"}, testissuer.Valid)
	for _, tt := range []struct {
		path, wantType string
	}{
		{"/api", "text/plain; charset=utf-8"}, {"/apis", "text/plain; charset=utf-8"}, {"/version", "text/plain; charset=utf-8"},
		{"/api/v1/namespaces/a/pods", "application/json"},
	} {
		req, err := http.NewRequest(http.MethodGet, p.url+tt.path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Impersonate-User", "carol")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, tt.path)
		assert.Equal(t, tt.wantType, resp.Header.Get("Content-Type"), tt.path)
		assert.Contains(t, string(b), "cannot impersonate resource", tt.path)
		if strings.HasPrefix(tt.wantType, "application/json") {
			var st metav1.Status
			require.NoError(t, json.Unmarshal(b, &st))
			assert.Equal(t, metav1.StatusReasonForbidden, st.Reason)
			assert.Equal(t, `users "carol" is forbidden: User "alice@example.com" cannot impersonate resource "users" in API group "" at the cluster scope: stand-in authorizer: no`, st.Message)
		} else {
			assert.Equal(t, `users "carol" is forbidden: User "alice@example.com" cannot impersonate resource "users" in API group "" at the cluster scope: stand-in authorizer: no`+"\n", string(b))
		}
	}
	assert.Contains(t, p.audit.String(), `"reason":"impersonation refused: users \"carol\" is forbidden: User \"alice@example.com\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope: stand-in authorizer: no"`)
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
				assert.Equal(t, identity.OriginalUserExtra, strings.ToLower(key), "the only extra")
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

// The filter's questions end by the request's time (--request-timeout),
// however many and however slow: the request does not hold its slot past
// it.
func TestCallerImpersonationWithinRequestTimeout(t *testing.T) {
	defer func(d time.Duration) { RequestTimeout = d }(RequestTimeout)
	RequestTimeout = 300 * time.Millisecond
	p := newTestProxy(t, structuredConfig, false)
	p.handler.CallerImpersonation = slowAuthorizer(200 * time.Millisecond)
	req, err := http.NewRequest(http.MethodGet, p.url+"/api/v1/namespaces/a/pods", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+p.mint(t, map[string]any{"email": "alice@example.com"}, testissuer.Valid))
	req.Header.Set("Impersonate-User", "bob")
	for i := range 15 {
		req.Header.Add("Impersonate-Group", fmt.Sprintf("g%d", i))
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Less(t, time.Since(start), 2*time.Second, "15 questions of 200 ms each, cut at 300 ms")
	assert.Empty(t, p.upstream.take())
}

// slowAuthorizer allows everything, after d, unless its context ends.
type slowAuthorizer time.Duration

func (s slowAuthorizer) Authorize(ctx context.Context, _ authorizer.Attributes) (authorizer.Decision, string, error) {
	select {
	case <-time.After(time.Duration(s)):
		return authorizer.DecisionAllow, "", nil
	case <-ctx.Done():
		return authorizer.DecisionNoOpinion, "", ctx.Err()
	}
}
