// Package oidcflags holds kube-apiserver's legacy --oidc-* flags as plain
// values. It imports nothing: the commands bind the flags in every binary,
// while only kubectl-impersonate-apiserver links pkg/server/authn, which converts
// them.
package oidcflags

// Legacy is kube-apiserver's legacy --oidc-* flags, as values;
// pkg/server/authn converts them as kube-apiserver does (LegacyConfig).
type Legacy struct {
	IssuerURL string
	// ClientIDs is --oidc-client-id; kube-apiserver takes one. More than
	// one becomes a MatchAny audience list, as a structured config would.
	ClientIDs []string
	// CA is the PEM content of kube-apiserver's --oidc-ca-file.
	CA            []byte
	UsernameClaim string
	// UsernamePrefix is --oidc-username-prefix: "" (unset) means
	// "<issuer>#" unless the claim is email; "-" means none.
	UsernamePrefix string
	GroupsClaim    string
	GroupsPrefix   string
	RequiredClaims map[string]string
	// SigningAlgs is --oidc-signing-algs (default RS256).
	SigningAlgs []string
}
