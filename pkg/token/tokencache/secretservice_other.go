//go:build !linux

package tokencache

// fastGetter has no faster path than go-keyring outside Linux.
var fastGetter = func(KeyringAPI) func(service, user string) (string, error) { return nil }

// CloseKeyring has nothing to close outside Linux.
func CloseKeyring() {}
