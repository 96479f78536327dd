package tokencache

import (
	"errors"
	"testing"
)

// FuzzDecodeEntry: a corrupted cache entry is ErrCorrupt (discarded with a
// notice), never a panic, never an entry without a token.
func FuzzDecodeEntry(f *testing.F) {
	good, _ := (&Entry{IDToken: "id", RefreshToken: "rt"}).Encode()
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`{"version":999,"idToken":"x"}`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodeEntry(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error is not ErrCorrupt: %v", err)
			}
			return
		}
		if e.IDToken == "" && e.AccessToken == "" && e.RefreshToken == "" {
			t.Fatal("an entry without a token")
		}
	})
}
