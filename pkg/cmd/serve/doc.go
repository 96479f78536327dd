// Package serve holds the commands that serve: proxy, the impersonating
// proxy (pkg/server/proxy), run by kubectl-impersonate-apiserver through
// pkg/server/kubecode.
package serve
