package logging

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestOneLine(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		max      int
		want     string
	}{
		{"newlines and tabs fold", "a\nb\t\tc\r\n d", 0, "a b c d"},
		{"short stays", "abc", 5, "abc"},
		{"exactly max stays", "abc", 3, "abc"},
		{"cut with ellipsis", "abcdef", 3, "abc…"},
		{"cut never splits a character", "aéé", 2, "a…"},
		{"empty", " \n ", 10, ""},
		{"terminal escapes and bidi escaped", "bad\x1b[31mred\u202egnp", 0, `bad\x1b[31mred\u202egnp`},
		{"C1, DEL and invalid UTF-8 escaped", "a\u009b1m\x7f\xffz", 0, `a\u009b1m\x7f\xffz`},
		{"a newline in an error starts no line", "denied\nkubectl-impersonate: fake", 0, "denied kubectl-impersonate: fake"},
	} {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, OneLine(tt.in, tt.max)) })
	}
}
