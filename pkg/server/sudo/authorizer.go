package sudo

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
)

// Authorizer is direct mode's fail-closed check: kube-apiserver's
// authorization webhook, placed before RBAC, asked about every request whose
// groups hold an elevation group (deploy/sudo/authorization-config.yaml's
// matchCondition).
//
//   - It never allows: it denies, or has no opinion and RBAC decides (the
//     group's standing RoleBinding).
//   - No opinion only when the request names, in the extra GrantExtra, one
//     grant of its user that counts now in the Store, whose group is the
//     request's one elevation group.
//   - Denied otherwise, the Store not current included (never a stale
//     allow); and kube-apiserver's failurePolicy Deny denies while no
//     replica answers.
type Authorizer struct {
	Store *Store
}

// MaxReviewBytes bounds a SubjectAccessReview's body.
const MaxReviewBytes = 1 << 20

// Decide is the decision on u: deny with why, or no opinion (deny false)
// with why.
func (s *Store) Decide(u user.Info) (deny bool, why string) {
	var sudoGroups []string
	for _, g := range u.GetGroups() {
		if strings.HasPrefix(g, GroupPrefix) {
			sudoGroups = append(sudoGroups, g)
		}
	}
	switch len(sudoGroups) {
	case 0:
		return false, "no elevation group"
	case 1:
	default:
		return true, fmt.Sprintf("sudo: one elevation at a time, not %d (%s)", len(sudoGroups),
			strings.Join(sudoGroups, ", "))
	}
	ns, name, ok := namedGrant(u.GetExtra())
	if !ok {
		return true, fmt.Sprintf("sudo: the group %s comes with one grant, named in the extra %s as NAMESPACE/NAME",
			sudoGroups[0], GrantExtra)
	}
	now := s.now()
	s.mu.RLock()
	defer s.mu.RUnlock()
	g, err := s.check(u, ns, name, now)
	if err != nil {
		return true, err.Error()
	}
	if want := Group(ns, g.Spec.Role); sudoGroups[0] != want {
		return true, fmt.Sprintf("sudo: the group %s is not grant %s's (%s)", sudoGroups[0], g.Ref(), want)
	}
	return false, fmt.Sprintf("sudo grant %s counts until %s", g.Ref(), g.Ends().UTC().Format("2006-01-02T15:04:05Z"))
}

// ServeHTTP answers one SubjectAccessReview (authorization.k8s.io/v1, as
// kube-apiserver posts it), with a reason only when it denies (a no
// opinion's would read as RBAC's refusal's); 400 for anything else, which
// kube-apiserver's failurePolicy Deny turns into a denial.
func (a Authorizer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST a SubjectAccessReview", http.StatusMethodNotAllowed)
		return
	}
	var review authorizationv1.SubjectAccessReview
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxReviewBytes))
	if err == nil {
		err = json.Unmarshal(body, &review)
	}
	if err == nil && (review.APIVersion != "authorization.k8s.io/v1" || review.Kind != "SubjectAccessReview") {
		err = errors.New("not an authorization.k8s.io/v1 SubjectAccessReview")
	}
	if err != nil {
		http.Error(w, "reading the SubjectAccessReview: "+err.Error(), http.StatusBadRequest)
		return
	}
	extra := map[string][]string{}
	for k, v := range review.Spec.Extra {
		extra[k] = slices.Clone(v)
	}
	u := &user.DefaultInfo{Name: review.Spec.User, UID: review.Spec.UID, Groups: review.Spec.Groups, Extra: extra}
	deny, why := a.Store.Decide(u)
	out := authorizationv1.SubjectAccessReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "authorization.k8s.io/v1", Kind: "SubjectAccessReview"},
		Status:   authorizationv1.SubjectAccessReviewStatus{Denied: deny},
	}
	if deny {
		out.Status.Reason = why
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
