package logging

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Claims are the token author's text: nothing in them may drive the
// terminal or disguise a name.
func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"alice@example.com":            "alice@example.com",
		"ünïcödé name":                 "ünïcödé name",
		"a\x1b[31mred":                 `a\x1b[31mred`,
		"tab\there":                    `tab\there`,
		"admin\u202egro.elpmaxe@ecila": `admin\u202egro.elpmaxe@ecila`,
		"zero\u200bwidth":              `zero\u200bwidth`,
		"bell\a":                       `bell\a`,
	} {
		assert.Equal(t, want, Printable(in), "%q", in)
	}
}

// The predicate of docs/security.md, rune by rune.
func TestUnsafe(t *testing.T) {
	for _, tt := range []struct {
		r    rune
		want bool
	}{
		{'\x00', true}, {'\t', true}, {'\n', true}, {'\x1b', true}, {'\x1f', true},
		{' ', false}, {'~', false}, {'\x7f', true},
		{'\u0080', true}, {'\u0085', true}, {'\u009b', true}, {'\u009f', true}, {'\u00a0', false}, {'é', false},
		{'\u2027', false}, {'\u2028', true}, {'\u2029', true}, {'\u202a', true}, {'\u202e', true}, {'\u202f', false},
		{'\u061c', true}, {'\u200d', false}, {'\u200e', true}, {'\u200f', true},
		{'\u2065', false}, {'\u2066', true}, {'\u2069', true}, {'\u206a', false},
		{'\ufffd', false}, {'😀', false},
	} {
		assert.Equal(t, tt.want, Unsafe(tt.r), "%U", tt.r)
	}
}

func TestSafeOutput(t *testing.T) {
	for _, tt := range []struct {
		name, out string
		want      int
	}{
		{"lines", "a\nb\n", -1},
		{"escaped text", `a\x1b\u202e` + "\n", -1},
		{"a replacement character is text", "\ufffd", -1},
		{"tab", "a\tb", 1},
		{"carriage return", "ab\r", 2},
		{"ESC", "ab\x1b[2J", 2},
		{"C1", "é\u009b", 2},
		{"bidi isolate", "x\u2067", 1},
		{"invalid UTF-8", "ok\xc3(", 2},
		{"cut character", "ok\xe2\x80", 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			off, _ := SafeOutput(tt.out)
			assert.Equal(t, tt.want, off)
		})
	}
}

// Every escape Escape writes satisfies the predicate, whatever the input.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "a\x1b]0;t\a", "\u202e\xff\xc3", "\t\r\n", "\u0085\u009b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{Escape(s), OneLine(s, 0), OneLine(s, 7)} {
			if off, r := SafeOutput(out); off >= 0 {
				t.Fatalf("%q escaped to %q, which holds %U at %d", s, out, r, off)
			}
		}
	})
}
