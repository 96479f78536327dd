// Package authzwebhook is a kube-apiserver authorization webhook for tests:
// it answers SubjectAccessReviews (authorization.k8s.io/v1) from a decision
// table, as a managed cluster's webhook authorizer before RBAC does (EKS,
// GKE, AKS, OpenShift): allow some requests, deny some, no opinion on the
// rest, so that the next authorizer in the chain (RBAC) decides. Its
// answers are the shapes the webhook authorizer documents
// (https://kubernetes.io/docs/reference/access-authn-authz/webhook/).
package authzwebhook

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sync"

	authzv1 "k8s.io/api/authorization/v1"
)

// Rule matches a resource request: every field given must equal the
// request's ("" matches anything); Member is a group the requester must be in.
type Rule struct {
	User, Member, Verb, Group, Resource, Subresource, Namespace, Name string
	// Allow or deny; Reason is the status reason kube-apiserver passes on.
	Allow  bool
	Reason string
}

func (r Rule) matches(s authzv1.SubjectAccessReviewSpec) bool {
	a := s.ResourceAttributes
	if a == nil || (r.Member != "" && !slices.Contains(s.Groups, r.Member)) {
		return false
	}
	for _, f := range [][2]string{{r.User, s.User}, {r.Verb, a.Verb}, {r.Group, a.Group}, {r.Resource, a.Resource}, {r.Subresource, a.Subresource}, {r.Namespace, a.Namespace}, {r.Name, a.Name}} {
		if f[0] != "" && f[0] != f[1] {
			return false
		}
	}
	return true
}

// Handler answers SubjectAccessReviews: the first matching rule decides,
// and a request no rule matches gets no opinion.
type Handler struct {
	Rules []Rule

	mu    sync.Mutex
	asked int
}

// Asked counts the reviews answered.
func (h *Handler) Asked() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.asked
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var sar authzv1.SubjectAccessReview
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&sar); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	h.asked++
	h.mu.Unlock()
	sar.Status = authzv1.SubjectAccessReviewStatus{}
	if rule, ok := h.Decides(sar.Spec); ok {
		sar.Status = authzv1.SubjectAccessReviewStatus{Allowed: rule.Allow, Denied: !rule.Allow, Reason: rule.Reason}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&sar)
}

// Decides is the rule that decides spec (the first that matches), false
// when the webhook has no opinion.
func (h *Handler) Decides(spec authzv1.SubjectAccessReviewSpec) (Rule, bool) {
	for _, rule := range h.Rules {
		if rule.matches(spec) {
			return rule, true
		}
	}
	return Rule{}, false
}
