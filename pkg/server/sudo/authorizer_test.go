package sudo

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation"
)

// TestAuthorizer: one table over every request the fail-closed webhook is
// asked about, through the SubjectAccessReview kube-apiserver posts. It
// never allows: no opinion (RBAC decides) only for its user's one live
// grant named in the extra, with that grant's group.
func TestAuthorizer(t *testing.T) {
	at := start.Add(10 * time.Minute)
	grantRef := map[string]authorizationv1.ExtraValue{GrantExtra: {"payments/sudo-x"}}
	for _, c := range []struct {
		name    string
		spec    authorizationv1.SubjectAccessReviewSpec
		edit    func(g *elevation.Grant, r *elevation.Request)
		now     time.Time
		stale   bool
		denied  bool
		because string
	}{
		{name: "no elevation group: no opinion", spec: authorizationv1.SubjectAccessReviewSpec{User: "alice",
			Groups: []string{"dev"}}, now: at, because: "no elevation group"},
		{name: "the live grant: no opinion, RBAC decides", spec: authorizationv1.SubjectAccessReviewSpec{User: "alice",
			Groups: []string{"system:authenticated", "sudo:payments:edit"}, Extra: grantRef}, now: at,
			because: "sudo grant payments/sudo-x counts until 2026-11-29T12:30:00Z"},
		{name: "at its end", spec: authorizationv1.SubjectAccessReviewSpec{User: "alice",
			Groups: []string{"sudo:payments:edit"}, Extra: grantRef}, now: start.Add(30 * time.Minute), denied: true,
			because: "expired at"},
		{name: "revoked", spec: authorizationv1.SubjectAccessReviewSpec{User: "alice",
			Groups: []string{"sudo:payments:edit"}, Extra: grantRef}, now: at, denied: true, because: "revoked",
			edit: func(g *elevation.Grant, _ *elevation.Request) {
				g.Status = &elevation.GrantStatus{RevokedBy: "bob"}
			}},
		{name: "its request gone", spec: authorizationv1.SubjectAccessReviewSpec{User: "alice",
			Groups: []string{"sudo:payments:edit"}, Extra: grantRef}, now: at, denied: true, because: "does not count",
			edit: func(_ *elevation.Grant, r *elevation.Request) { r.Name = "other" }},
		{name: "the view not current", spec: authorizationv1.SubjectAccessReviewSpec{User: "alice",
			Groups: []string{"sudo:payments:edit"}, Extra: grantRef}, now: at, stale: true, denied: true,
			because: "not current"},
		{name: "another user's grant", spec: authorizationv1.SubjectAccessReviewSpec{User: "mallory",
			Groups: []string{"sudo:payments:edit"}, Extra: grantRef}, now: at, denied: true, because: "alice's, not yours"},
		{name: "no grant named", spec: authorizationv1.SubjectAccessReviewSpec{User: "alice",
			Groups: []string{"sudo:payments:edit"}}, now: at, denied: true, because: "comes with one grant"},
		{name: "two grants named", spec: authorizationv1.SubjectAccessReviewSpec{User: "alice",
			Groups: []string{"sudo:payments:edit"},
			Extra:  map[string]authorizationv1.ExtraValue{GrantExtra: {"payments/sudo-x", "payments/sudo-x"}}},
			now: at, denied: true, because: "comes with one grant"},
		{name: "a grant that is not there", spec: authorizationv1.SubjectAccessReviewSpec{User: "alice",
			Groups: []string{"sudo:payments:edit"},
			Extra:  map[string]authorizationv1.ExtraValue{GrantExtra: {"payments/sudo-y"}}}, now: at, denied: true,
			because: "no sudo grant sudo-y"},
		{name: "another role's group", spec: authorizationv1.SubjectAccessReviewSpec{User: "alice",
			Groups: []string{"sudo:payments:admin"}, Extra: grantRef}, now: at, denied: true,
			because: "not grant payments/sudo-x's (sudo:payments:edit)"},
		{name: "another namespace's group", spec: authorizationv1.SubjectAccessReviewSpec{User: "alice",
			Groups: []string{"sudo:billing:edit"}, Extra: grantRef}, now: at, denied: true, because: "is not grant"},
		{name: "two elevation groups", spec: authorizationv1.SubjectAccessReviewSpec{User: "alice",
			Groups: []string{"sudo:payments:edit", "sudo:payments:admin"}, Extra: grantRef}, now: at, denied: true,
			because: "one elevation at a time"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, r := pair()
			if c.edit != nil {
				c.edit(&g, &r)
			}
			s := NewStore()
			s.Now = func() time.Time { return c.now }
			s.Load([]elevation.Grant{g}, []elevation.Request{r})
			if c.stale {
				s.Close("the API server went away")
				s.Now = func() time.Time { return c.now.Add(time.Minute) }
			}
			body, err := json.Marshal(authorizationv1.SubjectAccessReview{
				TypeMeta: sarType, Spec: c.spec})
			require.NoError(t, err)
			rec := httptest.NewRecorder()
			Authorizer{Store: s}.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(string(body))))
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			var out authorizationv1.SubjectAccessReview
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
			assert.Equal(t, sarType, out.TypeMeta)
			assert.False(t, out.Status.Allowed, "it never allows")
			assert.Equal(t, c.denied, out.Status.Denied, out.Status.Reason)
			if c.denied {
				assert.Contains(t, out.Status.Reason, c.because)
				return
			}
			assert.Empty(t, out.Status.Reason, "no opinion, no reason: RBAC's refusal would carry it")
			_, why := s.Decide(&user.DefaultInfo{Name: c.spec.User, Groups: c.spec.Groups,
				Extra: map[string][]string{GrantExtra: c.spec.Extra[GrantExtra]}})
			assert.Contains(t, why, c.because)
		})
	}
}

// TestAuthorizerRefusesWhatIsNotAReview: anything but a POSTed v1
// SubjectAccessReview is an error, which kube-apiserver's failurePolicy
// Deny turns into a denial.
func TestAuthorizerRefusesWhatIsNotAReview(t *testing.T) {
	for _, c := range []struct {
		name, method, body string
		code               int
	}{
		{"a GET", http.MethodGet, "", http.StatusMethodNotAllowed},
		{"not JSON", http.MethodPost, "{", http.StatusBadRequest},
		{"another kind", http.MethodPost, `{"apiVersion":"authorization.k8s.io/v1","kind":"TokenReview"}`,
			http.StatusBadRequest},
		{"v1beta1", http.MethodPost, `{"apiVersion":"authorization.k8s.io/v1beta1","kind":"SubjectAccessReview"}`,
			http.StatusBadRequest},
		{"over the bound", http.MethodPost, `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview",` +
			`"spec":{"user":"` + strings.Repeat("a", MaxReviewBytes) + `"}}`, http.StatusBadRequest},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			Authorizer{Store: NewStore()}.ServeHTTP(rec, httptest.NewRequest(c.method, "/", strings.NewReader(c.body)))
			assert.Equal(t, c.code, rec.Code)
		})
	}
}

var sarType = metav1.TypeMeta{APIVersion: "authorization.k8s.io/v1", Kind: "SubjectAccessReview"}
