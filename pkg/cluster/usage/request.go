package usage

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
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
	// Path is a non-resource request's URL path.
	Path string `json:"path,omitempty"`
	// Code is the answer's HTTP status.
	Code int `json:"code"`
	// Refused: the authorizer refused it (401, or 403 from RBAC's
	// decision), so it is no part of what the identity needs.
	Refused bool `json:"refused,omitempty"`
}

// ResourceWithSub is "resource/subresource", or the resource alone.
func (r Request) ResourceWithSub() string {
	if r.Subresource == "" {
		return r.Resource
	}
	return r.Resource + "/" + r.Subresource
}

// Impersonation is the authorizer's checks of h's Impersonate-* headers
// (k8s.io/apiserver's impersonation filter): impersonate on the user (a
// service account's object for system:serviceaccount:NS:NAME), each group,
// the UID and each extra's values.
func Impersonation(h http.Header) []Request {
	var out []Request
	if u := h.Get(authnv1.ImpersonateUserHeader); u != "" {
		if ns, name, ok := serviceAccount(u); ok {
			out = append(out, Request{Verb: "impersonate", Resource: "serviceaccounts", Namespace: ns, Name: name})
		} else {
			out = append(out, Request{Verb: "impersonate", Resource: "users", Name: u})
		}
	}
	for _, g := range h.Values(authnv1.ImpersonateGroupHeader) {
		out = append(out, Request{Verb: "impersonate", Resource: "groups", Name: g})
	}
	if uid := h.Get(authnv1.ImpersonateUIDHeader); uid != "" {
		out = append(out, Request{Verb: "impersonate", APIGroup: "authentication.k8s.io", Resource: "uids", Name: uid})
	}
	var keys []string
	for k := range h {
		if strings.HasPrefix(k, authnv1.ImpersonateUserExtraHeaderPrefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		key, err := url.PathUnescape(strings.ToLower(strings.TrimPrefix(k, authnv1.ImpersonateUserExtraHeaderPrefix)))
		if err != nil {
			continue
		}
		for _, v := range h[k] {
			out = append(out, Request{Verb: "impersonate", APIGroup: "authentication.k8s.io",
				Resource: "userextras", Subresource: key, Name: v})
		}
	}
	return out
}

// serviceAccount splits system:serviceaccount:NS:NAME.
func serviceAccount(user string) (ns, name string, ok bool) {
	rest, ok := strings.CutPrefix(user, "system:serviceaccount:")
	if !ok {
		return "", "", false
	}
	ns, name, ok = strings.Cut(rest, ":")
	return ns, name, ok && ns != "" && name != "" && !strings.Contains(name, ":")
}

// decisionAnnotation is the audit annotation kube-apiserver's
// authorization filter writes: "forbid" when the authorizer refused.
const decisionAnnotation = "authorization.k8s.io/decision"

// Event is r as kube-apiserver's audit log writes it at level Metadata,
// stage ResponseComplete (record writes the log least-privilege reads, and
// so reads kube-apiserver's own); impersonated is the user its
// Impersonate-User header named, if any.
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
	if r.Refused {
		ev.Annotations = map[string]string{decisionAnnotation: "forbid"}
	} else if r.Code != 0 {
		ev.Annotations = map[string]string{decisionAnnotation: "allow"}
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
