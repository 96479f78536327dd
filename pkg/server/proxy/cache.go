package proxy

import (
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/kubecode"
)

// DefaultCacheTTL is how long an authenticated token's identity is reused:
// kube-apiserver's --token-auth cache keeps successful authentications for
// 10 s (its TokenSuccessCacheTTL), so a key the issuer retires, or a
// changed distributed claim, takes effect as soon here; as there, a token
// may be accepted for up to that long past its exp, and refusals are never
// cached. The cache is k8s.io/apiserver's (token/cache): keyed by an HMAC
// of the token, never the token, striped, each entry expiring on its own.
const DefaultCacheTTL = kubecode.DefaultProxyCacheTTL
