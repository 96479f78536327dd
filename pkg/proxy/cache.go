package proxy

import (
	"crypto/sha256"
	"sync"
	"time"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/inspect"
)

// DefaultCacheSize bounds the verified-token cache.
const DefaultCacheSize = 4096

// identityCache remembers the identity of a verified token until the
// token's exp, keyed by the token's SHA-256 (tokens themselves are not
// kept). A token is immutable, so its signature check and claim mapping
// give the same answer until it expires; kubectl sends the same token for
// many requests, and an RSA verification plus CEL per request is the
// proxy's largest own cost. Failures are never cached.
type identityCache struct {
	mu      sync.Mutex
	max     int
	entries map[[sha256.Size]byte]cachedIdentity
}

type cachedIdentity struct {
	id     inspect.Identity
	uid    string
	expiry time.Time
}

func newIdentityCache(max int) *identityCache {
	return &identityCache{max: max, entries: map[[sha256.Size]byte]cachedIdentity{}}
}

func (c *identityCache) get(raw string, now time.Time) (cachedIdentity, bool) {
	if c == nil {
		return cachedIdentity{}, false
	}
	k := sha256.Sum256([]byte(raw))
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if ok && !now.Before(e.expiry) {
		delete(c.entries, k)
		return cachedIdentity{}, false
	}
	return e, ok
}

func (c *identityCache) put(raw string, e cachedIdentity, now time.Time) {
	if c == nil || !now.Before(e.expiry) {
		return
	}
	k := sha256.Sum256([]byte(raw))
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
