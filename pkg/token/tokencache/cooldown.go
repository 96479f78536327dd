package tokencache

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/safefile"
)

// LoginAttempt records an interactive login of one identity that has not
// succeeded: one running (Started, no Failed), or one that failed or was
// abandoned (Failed). It lives next to the entry's lock (id + ".login"),
// written and read under that lock, so that the next process knows not to
// open another browser for a while. It never holds a token.
type LoginAttempt struct {
	Started time.Time `json:"started"`
	Failed  time.Time `json:"failed,omitzero"`
	Reason  string    `json:"reason,omitempty"`
}

func attemptPath(dir, id string) string { return filepath.Join(dir, id+".login") }

// ReadLoginAttempt reads the record of id, nil when there is none or it
// cannot be read (a damaged record only loses a cooldown).
func ReadLoginAttempt(dir, id string) *LoginAttempt {
	b, _, err := safefile.ReadRegular(
		"login record", attemptPath(dir, id), 16<<10, safefile.ReadOptions{NoFollow: true, Rule: safefile.Private})
	if err != nil {
		return nil
	}
	var a LoginAttempt
	if json.Unmarshal(b, &a) != nil || a.Started.IsZero() {
		return nil
	}
	return &a
}

// WriteLoginAttempt replaces the record of id.
func WriteLoginAttempt(dir, id string, a LoginAttempt) error {
	if err := EnsureDir(dir); err != nil {
		return err
	}
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	if err := safefile.Write(attemptPath(dir, id), b, safefile.Options{Mode: 0o600, Sync: true}); err != nil {
		return fmt.Errorf("writing the login record: %w", err)
	}
	return nil
}

// ClearLoginAttempt removes the record of id.
func ClearLoginAttempt(dir, id string) { _ = os.Remove(attemptPath(dir, id)) }
