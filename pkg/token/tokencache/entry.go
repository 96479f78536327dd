package tokencache

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ErrCorrupt reports a cache entry that cannot be read back. Callers discard
// it with a notice and log in again.
var ErrCorrupt = errors.New("corrupted token cache entry")

// Entry is one cached token set.
type Entry struct {
	IDToken           string    `json:"id_token,omitempty" datapolicy:"token"`
	AccessToken       string    `json:"access_token,omitempty" datapolicy:"token"`
	RefreshToken      string    `json:"refresh_token,omitempty" datapolicy:"token"`
	TokenType         string    `json:"token_type,omitempty"`
	IDTokenExpiry     time.Time `json:"id_token_expiry,omitzero"`
	AccessTokenExpiry time.Time `json:"access_token_expiry,omitzero"`

	// Where it came from, for whoami and logout; never secret.
	Issuer     string    `json:"issuer,omitempty"`
	ClientID   string    `json:"client_id,omitempty"`
	GrantType  string    `json:"grant_type,omitempty"`
	Scopes     []string  `json:"scopes,omitempty"`
	ObtainedAt time.Time `json:"obtained_at,omitzero"`
}

const entryVersion = 1

type wireEntry struct {
	Version int `json:"version"`
	Entry
}

// Encode serialises e for a Store.
func (e *Entry) Encode() ([]byte, error) {
	b, err := json.Marshal(wireEntry{Version: entryVersion, Entry: *e})
	if err != nil {
		return nil, fmt.Errorf("encoding token cache entry: %w", err)
	}
	return b, nil
}

// DecodeEntry parses what Encode wrote. Anything else is ErrCorrupt.
func DecodeEntry(b []byte) (*Entry, error) {
	var w wireEntry
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if w.Version != entryVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrCorrupt, w.Version, entryVersion)
	}
	if w.IDToken == "" && w.AccessToken == "" && w.RefreshToken == "" {
		return nil, fmt.Errorf("%w: holds no token", ErrCorrupt)
	}
	return &w.Entry, nil
}
