// Package attributes is what kube-apiserver's authorizer is asked for a
// request, as k8s.io/apiserver's own request-info code reads it.
//
//   - Resolver is the one the proxy and record's endpoint share.
//   - Of is the checks of one request (its impersonation first), as
//     pkg/cluster/auditlog's requests.
package attributes

import (
	"net/http"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/auditlog"
)

// Resolver is kube-apiserver's own resolver of request attributes, with
// its prefixes (k8s.io/apiserver/pkg/server: /api is the legacy, groupless
// prefix, /apis the groups').
var Resolver = &apirequest.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// Of is what kube-apiserver's authorizer is asked for r, in its order.
//
//   - One impersonate check for each identity its Impersonate-* headers
//     name, in the legacy mode (auditlog.ImpersonationChecks).
//   - Then the request itself.
func Of(r *http.Request) []auditlog.Request {
	main := request(r)
	u, ok := auditlog.Identity(r.Header)
	if !ok {
		return []auditlog.Request{main}
	}
	return append(auditlog.ImpersonationChecks(u, "", main), main)
}

// request is r's own attributes, as k8s.io/apiserver reads them.
func request(r *http.Request) auditlog.Request {
	info, _ := Resolver.NewRequestInfo(r) // on an error, info holds what was parsed, as kube-apiserver's
	switch {
	case info == nil:
		return auditlog.Request{Verb: strings.ToLower(r.Method), Path: r.URL.Path}
	case !info.IsResourceRequest:
		return auditlog.Request{Verb: info.Verb, Path: info.Path}
	}
	return auditlog.Request{Verb: info.Verb, APIGroup: info.APIGroup, Resource: info.Resource,
		Subresource: info.Subresource, Namespace: info.Namespace, Name: info.Name}
}

// HasDotSegment reports "." or ".." path segments, raw or percent-encoded
// (an encoded slash splits segments as the upstream would decode it): a
// path an upstream or a gateway before it may resolve elsewhere than the
// attributes read from it say; the proxy and record's endpoint refuse it.
func HasDotSegment(u *url.URL) bool {
	for _, p := range []string{u.Path, u.RawPath} {
		for _, seg := range strings.Split(p, "/") {
			if d, err := url.PathUnescape(seg); err == nil {
				seg = d
			}
			for _, s := range strings.Split(strings.ReplaceAll(seg, `\`, "/"), "/") {
				// "..;x" is ".." to servers that read path parameters.
				s, _, _ = strings.Cut(s, ";")
				if s == "." || s == ".." {
					return true
				}
			}
		}
	}
	return false
}

// IdentityHeader is a header that carries an identity: Authorization,
// Impersonate-* or X-Remote-* (request-header authentication), in any case
// and with _ for - (CGI-style gateways and nginx's underscores_in_headers
// turn Impersonate_User into Impersonate-User).
func IdentityHeader(name string) bool {
	l := NormalHeader(name)
	return l == "authorization" || ImpersonationHeader(name) || strings.HasPrefix(l, "x-remote-")
}

// ConnectionNamesIdentity is the first identity header (IdentityHeader) h's
// Connection header names, "" when none: httputil.ReverseProxy drops every
// header Connection names from what it sends, so a request naming one is
// not sent as it was received (its Impersonate-* would be read, then
// dropped). The proxy and record's endpoint refuse it.
func ConnectionNamesIdentity(h http.Header) string {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if n := strings.ToLower(strings.TrimSpace(name)); IdentityHeader(n) {
				return n
			}
		}
	}
	return ""
}

// ImpersonationHeader tells an Impersonate-* header, in any spelling a
// gateway may read as one (case, _ for -).
func ImpersonationHeader(name string) bool {
	return strings.HasPrefix(NormalHeader(name), "impersonate-")
}

// NormalHeader is name as a gateway may read it: lower case, _ as -.
func NormalHeader(name string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "_", "-")
}
