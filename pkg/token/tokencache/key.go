// Package tokencache keeps the tokens kubectl-impersonate obtained, keyed by
// every setting that changes them, in the OS keyring, on disk or nowhere.
package tokencache

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
)

// Key holds every setting that changes which token the provider issues. Two
// runs with the same settings must produce the same Key.ID, whatever the
// order of the flags or of map iteration.
type Key struct {
	Issuer         string
	ClientID       string
	Scopes         []string
	GrantType      string
	UseAccessToken bool
	// Extra holds settings of later stages, such as an impersonation
	// exchange, by name.
	Extra map[string]string
}

// keyVersion changes whenever the encoding below or the settings a key holds
// change, so that old entries (v1: before the allowed servers and the login
// bindings were in the key, 2026-11-25) are never read for another spelling;
// are not misread.
const keyVersion = "v2"

// canonical returns a copy with sorted, de-duplicated scopes and no empty
// extras; encode sorts the extras by name.
func (k Key) canonical() Key {
	c := k
	c.Scopes = slices.Clone(k.Scopes)
	slices.Sort(c.Scopes)
	c.Scopes = slices.Compact(c.Scopes)
	c.Scopes = slices.DeleteFunc(c.Scopes, func(s string) bool { return s == "" })
	if len(c.Scopes) == 0 {
		c.Scopes = nil
	}
	c.Extra = nil
	for name, value := range k.Extra {
		if value == "" {
			continue
		}
		if c.Extra == nil {
			c.Extra = map[string]string{}
		}
		c.Extra[name] = value
	}
	return c
}

// ID is the hex SHA-256 of the canonical encoding: the name of the cache
// entry and of its lock.
func (k Key) ID() string {
	sum := sha256.Sum256(k.canonical().encode())
	return hex.EncodeToString(sum[:])
}

// encode writes every field, in a fixed order, each string with its length
// so that no two keys share an encoding. It is hand-written rather than
// encoding/json: this runs on every kubectl call, and json's reflection
// over a new type costs more than the rest of the cache lookup.
func (k Key) encode() []byte {
	b := make([]byte, 0, 256)
	b = append(b, keyVersion...)
	str := func(s string) {
		b = strconv.AppendInt(append(b, '|'), int64(len(s)), 10)
		b = append(append(b, ':'), s...)
	}
	str(k.Issuer)
	str(k.ClientID)
	str(k.GrantType)
	str(strconv.FormatBool(k.UseAccessToken))
	str(strconv.Itoa(len(k.Scopes)))
	for _, s := range k.Scopes {
		str(s)
	}
	names := make([]string, 0, len(k.Extra))
	for n := range k.Extra {
		names = append(names, n)
	}
	slices.Sort(names)
	str(strconv.Itoa(len(names)))
	for _, n := range names {
		str(n)
		str(k.Extra[n])
	}
	return b
}
