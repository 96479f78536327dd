// Package serve holds the commands that serve: proxy, the impersonating
// proxy (pkg/proxy), run by kubectl-impersonate-apiserver through
// pkg/kubecode.
package serve
