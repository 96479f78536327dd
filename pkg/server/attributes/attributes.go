// Package attributes is what kube-apiserver's authorizer is asked for a
// request, as k8s.io/apiserver's own request-info code reads it: the
// resolver the proxy and record's endpoint share, and the checks of one
// request (its impersonation first) as pkg/cluster/usage's requests.
package attributes

import (
	"net/http"
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
