package proxy

import (
	"crypto/sha256"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
)

// DefaultCacheSize bounds the verified-token cache.
const DefaultCacheSize = 4096

// cacheTTL bounds how long an authentication is reused: kube-apiserver
// caches successful token authentications for 10 s, so a key the issuer
// retires, or a changed distributed claim, takes effect as soon here.
const cacheTTL = 10 * time.Second

// identityCache remembers the identity of a verified token for cacheTTL,
// never past the token's exp, keyed by the token's SHA-256 (tokens themselves are not
// kept). A token is immutable, so its signature check and claim mapping
// give the same answer until it expires; kubectl sends the same token for
// many requests, and an RSA verification plus CEL per request is the
// proxy's largest own cost. Failures are never cached. (kube-apiserver
// caches token authentications too, for 10 s.)
type identityCache struct {
	mu      sync.Mutex
	max     int
	entries map[[sha256.Size]byte]cachedIdentity
}

type cachedIdentity struct {
	user   user.Info
	expiry time.Time
}

func newIdentityCache(max int) *identityCache {
	return &identityCache{max: max, entries: map[[sha256.Size]byte]cachedIdentity{}}
}

func (c *identityCache) get(raw string, now time.Time) (user.Info, bool) {
	if c == nil {
		return nil, false
	}
	k := tokenKey(raw)
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok {
		return nil, false
	}
	if !now.Before(e.expiry) {
		delete(c.entries, k)
		return nil, false
	}
	return e.user, true
}

func (c *identityCache) put(raw string, u user.Info, expiry, now time.Time) {
	if c == nil || !now.Before(expiry) {
		return
	}
	if limit := now.Add(cacheTTL); expiry.After(limit) {
		expiry = limit
	}
	e := cachedIdentity{user: u, expiry: expiry}
	k := tokenKey(raw)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.max {
		// Drop the expired entries; if that frees nothing, start over
		// (bounded memory beats an LRU's bookkeeping for this use).
		for k, v := range c.entries {
			if !now.Before(v.expiry) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= c.max {
			clear(c.entries)
		}
	}
	c.entries[k] = e
}
