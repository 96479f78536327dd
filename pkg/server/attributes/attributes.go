// Package attributes is what kube-apiserver's authorizer is asked for a
// request, as k8s.io/apiserver's own request-info code reads it: the
// resolver the proxy and record's endpoint share, and the checks of one
// request (its impersonation first) as pkg/cluster/usage's requests.
package attributes

import (
	"net/http"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/usage"
)

// Resolver is kube-apiserver's own resolver of request attributes, with
// its prefixes (k8s.io/apiserver/pkg/server: /api is the legacy, groupless
// prefix, /apis the groups').
var Resolver = &apirequest.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// Of is what kube-apiserver's authorizer is asked for r: the request
// itself, then one impersonate request for each identity its
// Impersonate-* headers name (kube-apiserver asks those first).
func Of(r *http.Request) []usage.Request {
	out := usage.Impersonation(r.Header)
	info, _ := Resolver.NewRequestInfo(r) // on an error, info holds what was parsed, as kube-apiserver's
	if info == nil {
		return append(out, usage.Request{Verb: strings.ToLower(r.Method), Path: r.URL.Path})
	}
	if !info.IsResourceRequest {
		return append(out, usage.Request{Verb: info.Verb, Path: info.Path})
	}
	return append(out, usage.Request{Verb: info.Verb, APIGroup: info.APIGroup, Resource: info.Resource,
		Subresource: info.Subresource, Namespace: info.Namespace, Name: info.Name})
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
