package auditlog

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSeal: a recording's events count only inside a segment a valid seal
// covers, and with keys only under one of them; whatever else is in the
// file (lines before, between or after, an edited line, another key's
// segment) is counted unsealed and not read.
func TestSeal(t *testing.T) {
	pubA, privA, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	pubB, privB, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	events := func(names ...string) []byte {
		var b bytes.Buffer
		for _, n := range names {
			line, err := json.Marshal(Request{Verb: "get", Resource: "configmaps", Namespace: "a", Name: n, Code: 200,
				Decision: Allow}.Event("/x", "", time.Now()))
			require.NoError(t, err)
			b.Write(append(line, '\n'))
		}
		return b.Bytes()
	}
	seal := func(b []byte, k ed25519.PrivateKey) []byte {
		s, err := Seal(b, k)
		require.NoError(t, err)
		return s
	}
	names := func(l Log) []string {
		var out []string
		for _, r := range l.Requests {
			out = append(out, r.Name)
		}
		return out
	}
	segA := seal(events("a1", "a2"), privA)
	segB := seal(events("b1"), privB)
	edited := bytes.Replace(segA, []byte(`"a2"`), []byte(`"zz"`), 1)
	for _, tt := range []struct {
		name     string
		file     []byte
		keys     []ed25519.PublicKey
		want     []string
		unsealed int
	}{
		{"one segment", segA, nil, []string{"a1", "a2"}, 0},
		{"its key", segA, []ed25519.PublicKey{pubA}, []string{"a1", "a2"}, 0},
		{"another key", segA, []ed25519.PublicKey{pubB}, nil, 2},
		{"two segments, any key", append(append([]byte{}, segA...), segB...), nil, []string{"a1", "a2", "b1"}, 0},
		{"two segments, one key", append(append([]byte{}, segA...), segB...), []ed25519.PublicKey{pubA},
			[]string{"a1", "a2"}, 1},
		{"a line before the segment", append(events("forged"), segA...), nil, nil, 3},
		{"a line after it", append(append([]byte{}, segA...), events("forged")...), nil, []string{"a1", "a2"}, 1},
		{"an edited line", edited, nil, nil, 2},
		{"no seal at all", events("x"), nil, nil, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := Read(bytes.NewReader(tt.file), ReadOptions{Sealed: true, Keys: tt.keys})
			require.NoError(t, err)
			assert.Equal(t, tt.want, names(l))
			assert.Equal(t, tt.unsealed, l.Unsealed)
			if tt.unsealed == 0 {
				assert.Empty(t, l.Skips)
			}
		})
	}
	l, err := Read(bytes.NewReader(append(events("forged"), segA...)), ReadOptions{Sealed: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"line 1: 3 lines to line 3: the lines before this seal are not the ones record sealed"},
		l.Skips)
	l, err = Read(bytes.NewReader(append(append([]byte{}, segA...), events("forged", "again")...)),
		ReadOptions{Sealed: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"line 4: 2 lines to line 5: not sealed by record (lines written by someone else, or a " +
		"recording cut short)"}, l.Skips)
	empty := seal(nil, privA)
	l, err = Read(bytes.NewReader(empty), ReadOptions{Sealed: true, Keys: []ed25519.PublicKey{pubA}})
	require.NoError(t, err)
	assert.Empty(t, l.Requests, "a recording of no request is sealed too")
	assert.Zero(t, l.Unsealed)
	assert.Equal(t, map[string]int{FormatKey(pubA): 0}, l.SealKeys)
	l, err = Read(bytes.NewReader(append(events("x"), segA...)), ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"x", "a1", "a2"}, names(l), "an audit log has no seals: all is read")
	_, err = ParseKey(FormatKey(pubA))
	assert.NoError(t, err)
	for _, bad := range []string{"", "ed25519:", "ed25519:zz", "rsa:" + strings.Repeat("0", 64),
		"ed25519:" + strings.Repeat("0", 62)} {
		_, err := ParseKey(bad)
		assert.ErrorContains(t, err, "is not a recording key", bad)
	}
	_, err = Seal([]byte("half a line"), privA)
	assert.Error(t, err)
}
