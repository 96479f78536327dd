package auditlog

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// A recording is sealed by record once its command's process group has
// ended: the command runs as the same user and can write to the file
// while it runs, so record keeps its events in memory and appends them
// with a seal line signed by a key made for the run (ed25519), whose
// public half it prints. Read counts an event only inside a segment a
// valid seal covers (ReadOptions.Sealed), and only under the keys given
// (ReadOptions.Keys) when there are any: lines the command wrote itself
// fall outside every seal.

// sealKind is the kind of a seal line.
const sealKind = "RecordingSeal"

// seal is the last line of a recorded segment.
type seal struct {
	Kind string `json:"kind"`
	// Events counts the lines of the segment; SHA256 is the digest of
	// them, each with its newline.
	Events    int    `json:"events"`
	SHA256    string `json:"sha256"`
	Key       string `json:"key"`
	Signature string `json:"signature"`
}

// KeyPrefix begins a recording key as record prints it.
const KeyPrefix = "ed25519:"

// FormatKey is a public key as record prints it and least-privilege's
// --recording-key takes it.
func FormatKey(k ed25519.PublicKey) string { return KeyPrefix + hex.EncodeToString(k) }

// ParseKey reads a key FormatKey wrote.
func ParseKey(s string) (ed25519.PublicKey, error) {
	b, err := hex.DecodeString(strings.TrimPrefix(s, KeyPrefix))
	if err != nil || !strings.HasPrefix(s, KeyPrefix) || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%q is not a recording key (record prints one: ed25519: and 64 hexadecimal digits)",
			s)
	}
	return b, nil
}

// sealed is what the signature covers: the digest and the count.
func sealed(digest []byte, events int) []byte {
	return fmt.Appendf(nil, "kubectl-impersonate recording seal v1\n%d\n%x\n", events, digest)
}

// Seal is events (whole lines, each ending in a newline) followed by
// their seal line, signed with key.
func Seal(events []byte, key ed25519.PrivateKey) ([]byte, error) {
	if len(events) > 0 && events[len(events)-1] != '\n' {
		return nil, errors.New("sealing a recording: its last event is not a whole line")
	}
	digest := sha256.Sum256(events)
	n := bytes.Count(events, []byte("\n"))
	line, err := json.Marshal(seal{Kind: sealKind, Events: n, SHA256: hex.EncodeToString(digest[:]),
		Key:       FormatKey(key.Public().(ed25519.PublicKey)),
		Signature: hex.EncodeToString(ed25519.Sign(key, sealed(digest[:], n)))})
	if err != nil {
		return nil, err
	}
	return append(append(events, line...), '\n'), nil
}

// segment is a recording's lines read since the last seal.
type segment struct {
	lines   bytes.Buffer
	n       int
	pending []*entry
	first   int // the line number of its first line
}

// check verifies s's seal line against the lines read and keys (any key
// when none): the key it was signed with, or why it does not hold.
func (s *segment) check(line []byte, keys []ed25519.PublicKey) (string, error) {
	var sl seal
	if err := json.Unmarshal(line, &sl); err != nil {
		return "", errors.New("a seal that is not one")
	}
	key, err := ParseKey(sl.Key)
	if err != nil {
		return "", err
	}
	digest := sha256.Sum256(s.lines.Bytes())
	sig, err := hex.DecodeString(sl.Signature)
	switch {
	case err != nil || sl.Events != s.n || sl.SHA256 != hex.EncodeToString(digest[:]) ||
		!ed25519.Verify(key, sealed(digest[:], s.n), sig):
		return "", errors.New("the lines before this seal are not the ones record sealed")
	case len(keys) > 0 && !containsKey(keys, key):
		return "", fmt.Errorf("sealed by %s, not by a --recording-key given", sl.Key)
	}
	return sl.Key, nil
}

func containsKey(keys []ed25519.PublicKey, k ed25519.PublicKey) bool {
	for _, c := range keys {
		if c.Equal(k) {
			return true
		}
	}
	return false
}
