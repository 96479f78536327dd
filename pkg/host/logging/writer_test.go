package logging

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSafeWriter(t *testing.T) {
	for _, tt := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"clean text passes", []string{"alice\n", "bob\n"}, "alice\nbob\n"},
		{"controls escaped, newline and tab kept", []string{"a\x1b[2J\tb\r\n"}, `a\u001b[2J` + "\tb" + `\u000d` + "\n"},
		{"C1 and bidi", []string{"x\u009by\u202ez"}, `x\u009by\u202ez`},
		{"a character split across writes", []string{"caf\xc3", "\xa9 \xe2\x80", "\xae!"}, "café " + `\u202e` + "!"},
		{"invalid bytes", []string{"a\xffb"}, `a\xffb`},
		{"an unfinished character at the end", []string{"ok\xe2\x80"}, `ok\xe2\x80`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			w := NewSafeWriter(&b)
			for _, s := range tt.writes {
				n, err := w.Write([]byte(s))
				require.NoError(t, err)
				assert.Equal(t, len(s), n)
			}
			require.NoError(t, w.Flush())
			assert.Equal(t, tt.want, b.String())
			off, _ := SafeOutput(strings.ReplaceAll(b.String(), "\t", " "))
			assert.Equal(t, -1, off)
		})
	}
}

// A JSON document through the writer stays valid, with its strings equal.
func TestSafeWriterKeepsJSON(t *testing.T) {
	in := map[string]string{"name": "a\u009b\u202e\x7fz", "n\u2066": "ok"}
	b, err := json.Marshal(in)
	require.NoError(t, err)
	var out bytes.Buffer
	_, err = NewSafeWriter(&out).Write(b)
	require.NoError(t, err)
	off, _ := SafeOutput(out.String())
	assert.Equal(t, -1, off)
	var back map[string]string
	require.NoError(t, json.Unmarshal(out.Bytes(), &back))
	assert.Equal(t, in, back)
}

func TestStatusLine(t *testing.T) {
	var b bytes.Buffer
	StatusLine(NewSafeWriter(&b), "ns \x1b[31m: 3/9")
	assert.Equal(t, EraseLine+`ns \x1b[31m: 3/9`, b.String(), "the erase sequence is the terminal's own, the text escaped")
}

// Writers at once (klog, a notice) neither race nor tear a character.
func TestSafeWriterConcurrent(t *testing.T) {
	var b bytes.Buffer
	w := NewSafeWriter(&b)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				_, _ = w.Write([]byte("é\u202e\n"))
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 800, strings.Count(b.String(), "é\\u202e\n"))
}
