package auditlog

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbaceval"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/risk"
)

// Request is one request as kube-apiserver's authorizer sees it: a
// resource request (Resource set) or a non-resource one (Path set).
type Request struct {
	// User is who the request was authorized as ("" when not known: a
	// recording knows the credential, not the name).
	User        string `json:"user,omitempty"`
	Verb        string `json:"verb"`
	APIGroup    string `json:"apiGroup,omitempty"`
	Resource    string `json:"resource,omitempty"`
	Subresource string `json:"subresource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	// Created is the name of the object a create without a name in its
	// URL made (from the response): the authorizer saw none (Name "").
	Created string `json:"created,omitempty"`
	// Path is a non-resource request's URL path.
	Path string `json:"path,omitempty"`
	// Code is the answer's HTTP status (0: none came).
	Code int `json:"code"`
	// Decision is what the cluster was seen to decide: only Allow is
	// granted.
	Decision Decision `json:"decision,omitempty"`
}

// Decision is what the cluster was seen to decide of a request.
type Decision string

const (
	// Undecided: nothing shows that the authorizer allowed it: no answer,
	// an answer a filter before the authorizer gives (429, 5xx, an
	// impersonation's 400), or an audit event without the authorizer's
	// decision. Counted and shown, never granted.
	Undecided Decision = ""
	// Allow: the authorizer allowed it (its decision in the audit event,
	// or an answer only a handler past the authorizer gives).
	Allow Decision = "allow"
	// Forbid: refused (a 401, the authorizer's 403).
	Forbid Decision = "forbid"
)

// DecisionOf is what an HTTP answer from kube-apiserver shows its
// authorizer decided. Its filters run authentication (401), impersonation
// (403, 400), priority and fairness (429), then authorization (403, 500):
// only a handler past them all answers 2xx, 101, 304 or the API's own
// errors (404 no such object, 405, 406, 409 conflict, 410 expired, 412,
// 415, 422 invalid). A 403 is refused whoever wrote it (an admission's
// cannot be told from the authorizer's by its bytes); anything else is
// undecided.
func DecisionOf(code int) Decision {
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden:
		return Forbid
	case http.StatusSwitchingProtocols, http.StatusNotModified, http.StatusNotFound, http.StatusMethodNotAllowed,
		http.StatusNotAcceptable, http.StatusConflict, http.StatusGone, http.StatusPreconditionFailed,
		http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity:
		return Allow
	}
	if code >= 200 && code < 300 {
		return Allow
	}
	return Undecided
}

// ResourceWithSub is "resource/subresource", or the resource alone.
func (r Request) ResourceWithSub() string {
	if r.Subresource == "" {
		return r.Resource
	}
	return r.Resource + "/" + r.Subresource
}

// Identity is who h's Impersonate-* headers ask to act as; false when
// they name no user (kube-apiserver refuses groups, a UID or extra
// without one: 400).
func Identity(h http.Header) (authnv1.UserInfo, bool) {
	u := authnv1.UserInfo{Username: h.Get(authnv1.ImpersonateUserHeader),
		Groups: h.Values(authnv1.ImpersonateGroupHeader), UID: h.Get(authnv1.ImpersonateUIDHeader)}
	for k, vs := range h {
		if key, ok := strings.CutPrefix(k, authnv1.ImpersonateUserExtraHeaderPrefix); ok {
			// As kube-apiserver's unescapeExtraKey: lower case, unescaped,
			// or as written when it does not unescape.
			key = strings.ToLower(key)
			if u, err := url.PathUnescape(key); err == nil {
				key = u
			}
			if u.Extra == nil {
				u.Extra = map[string]authnv1.ExtraValue{}
			}
			u.Extra[key] = append(u.Extra[key], vs...)
		}
	}
	return u, u.Username != ""
}

// ImpersonationChecks are the checks kube-apiserver's impersonation filter
// makes to let a request act as u (k8s.io/apiserver, v0.37).
//
//   - constraint "" is the legacy mode: impersonate on the user (a service
//     account's object for system:serviceaccount:NS:NAME), each group, the
//     UID and each extra's values.
//   - constraint "impersonate:MODE" is constrained impersonation (KEP-5284,
//     as the audit event's impersonationConstraint names it):
//     impersonate:MODE on the same identity in authentication.k8s.io, then
//     impersonate-on:MODE:VERB on main, the request itself.
func ImpersonationChecks(u authnv1.UserInfo, constraint string, main Request) []Request {
	mode, constrained := strings.CutPrefix(constraint, "impersonate:")
	verb, group := "impersonate", ""
	if constrained {
		verb, group = constraint, risk.ImpersonationGroup
	}
	var out []Request
	switch ns, name, ok := rbaceval.SplitServiceAccount(u.Username); {
	case ok:
		out = append(out, Request{Verb: verb, APIGroup: group, Resource: "serviceaccounts", Namespace: ns, Name: name})
	case constrained && (mode == risk.ModeArbitraryNode || mode == risk.ModeAssociatedNode):
		out = append(out, Request{Verb: verb, APIGroup: group, Resource: "nodes",
			Name: strings.TrimPrefix(u.Username, "system:node:")})
	default:
		out = append(out, Request{Verb: verb, APIGroup: group, Resource: "users", Name: u.Username})
	}
	for _, g := range u.Groups {
		out = append(out, Request{Verb: verb, APIGroup: group, Resource: "groups", Name: g})
	}
	if u.UID != "" {
		out = append(out, Request{Verb: verb, APIGroup: risk.ImpersonationGroup, Resource: "uids", Name: u.UID})
	}
	keys := make([]string, 0, len(u.Extra))
	for k := range u.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range u.Extra[k] {
			out = append(out, Request{Verb: verb, APIGroup: risk.ImpersonationGroup, Resource: "userextras",
				Subresource: k, Name: v})
		}
	}
	if constrained {
		on := main
		on.User, on.Verb = "", risk.ImpersonateOnVerb(mode, main.Verb)
		out = append(out, on)
	}
	return out
}

// addedByServer tells the groups kube-apiserver gives an impersonated user
// itself, asking no one: system:authenticated to all (system:unauthenticated
// to system:anonymous), a service account's
// two groups when none were asked, system:nodes to a node in the
// constrained modes. An audit event lists them among the groups; granting
// them would grant what was never asked.
func addedByServer(username, group string) bool {
	if group == "system:authenticated" || username == "system:anonymous" && group == "system:unauthenticated" {
		return true
	}
	if ns, _, ok := rbaceval.SplitServiceAccount(username); ok {
		return group == "system:serviceaccounts" || group == "system:serviceaccounts:"+ns
	}
	return group == "system:nodes" && strings.HasPrefix(username, "system:node:")
}

// withoutServerGroups is u less the groups the server added (addedByServer).
func withoutServerGroups(u authnv1.UserInfo) authnv1.UserInfo {
	u.Groups = slices.DeleteFunc(slices.Clone(u.Groups), func(g string) bool { return addedByServer(u.Username, g) })
	return u
}

// DecisionAnnotation is the audit annotation kube-apiserver's
// authorization filter writes, "allow" or "forbid": the one positive
// evidence an audit event carries.
const DecisionAnnotation = "authorization.k8s.io/decision"

// Event is r as kube-apiserver's audit log writes it at level Metadata,
// stage ResponseComplete (record writes the log least-privilege reads, and
// so reads kube-apiserver's own), with the decision annotation when r
// was decided; impersonated is the user its Impersonate-User header
// named, if any.
func (r Request) Event(requestURI, impersonated string, at time.Time) auditv1.Event {
	ev := auditv1.Event{
		TypeMeta:                 metav1.TypeMeta{Kind: "Event", APIVersion: auditv1.SchemeGroupVersion.String()},
		Level:                    auditv1.LevelMetadata,
		AuditID:                  types.UID(newAuditID()),
		Stage:                    auditv1.StageResponseComplete,
		RequestURI:               requestURI,
		Verb:                     r.Verb,
		User:                     authnv1.UserInfo{Username: r.User},
		ResponseStatus:           &metav1.Status{Code: int32(r.Code)},
		RequestReceivedTimestamp: metav1.NewMicroTime(at),
		StageTimestamp:           metav1.NewMicroTime(at),
	}
	if impersonated != "" {
		ev.ImpersonatedUser = &authnv1.UserInfo{Username: impersonated}
	}
	if r.Resource != "" {
		ev.ObjectRef = &auditv1.ObjectReference{Resource: r.Resource, Subresource: r.Subresource,
			Namespace: r.Namespace, Name: r.Name, APIGroup: r.APIGroup}
	}
	if r.Decision != Undecided {
		ev.Annotations = map[string]string{DecisionAnnotation: string(r.Decision)}
	}
	return ev
}

// newAuditID is a random UUID (version 4), as kube-apiserver's audit IDs.
func newAuditID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
