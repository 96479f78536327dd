// Package logging is a small levelled logger for stderr. It never receives a
// token, secret or code: callers log URLs, names and outcomes only.
package logging

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Logger writes lines at or below its verbosity to W. The zero value and a
// nil *Logger discard everything.
type Logger struct {
	W     io.Writer
	Level int
}

// V reports whether level is enabled.
func (l *Logger) V(level int) bool {
	return l != nil && l.W != nil && level <= l.Level
}

// Printf writes one line when level is enabled.
func (l *Logger) Printf(level int, format string, args ...any) {
	if !l.V(level) {
		return
	}
	_, _ = fmt.Fprintf(l.W, format+"\n", args...)
}

// OneLine folds s (an error or an answer's text) into one line: runs of
// white space, newlines included, become one space, other control and
// format characters (terminal escapes, bidi overrides) become U+FFFD, and
// more than max bytes (0: no limit) are cut at a character boundary and
// end in "…".
func OneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.Map(func(r rune) rune {
		if r != ' ' && !strconv.IsPrint(r) {
			return utf8.RuneError
		}
		return r
	}, s)
	if max <= 0 || len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Printable escapes what is not printable (a claim is the token author's
// text: an escape sequence must not reach the terminal, and a
// bidirectional override or zero-width character must not disguise a
// name), and tabs, which would break the table.
func Printable(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }) {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}
