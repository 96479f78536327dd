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
