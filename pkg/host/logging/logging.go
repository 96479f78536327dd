// Package logging is a small levelled logger for stderr and the one
// escaping printer of what others wrote.
//
//   - What others wrote: a token's claims, an API server's or a provider's
//     answers, a kubeconfig.
//   - The logger never receives a token, secret or code: callers log URLs,
//     names and outcomes only.
//
// The predicate (Unsafe, docs/security.md): C0 controls, DEL, C1 controls,
// the bidirectional embeddings, overrides and isolates (U+202A-U+202E,
// U+2066-U+2069) and invalid UTF-8 never reach the terminal as they are.
// Escape shows them as Go escapes (\x1b, \u202e, \xff); tabs too, since a
// tab in a cell would break a table. The tests of every command assert the
// predicate on stdout and stderr (SafeOutput).
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

// Printf writes one line when level is enabled, escaped: what it quotes (a
// URL, an answer's error) is someone else's text, and a newline in it must
// not start a line of its own.
func (l *Logger) Printf(level int, format string, args ...any) {
	if !l.V(level) {
		return
	}
	_, _ = io.WriteString(l.W, Escape(fmt.Sprintf(format, args...))+"\n")
}

// Unsafe reports whether r may not reach a terminal as it is: a C0 control
// (U+0000-U+001F, newline and tab included), DEL, a C1 control
// (U+0080-U+009F), a bidirectional embedding, override or isolate
// (U+202A-U+202E, U+2066-U+2069) or mark (U+061C, U+200E, U+200F), which
// would disguise a name, or a line or paragraph separator (U+2028,
// U+2029). Invalid UTF-8 is unsafe too (utf8.RuneError of size 1; see
// SafeOutput).
func Unsafe(r rune) bool {
	return r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f ||
		r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 ||
		r == 0x061c || r == 0x200e || r == 0x200f || r == 0x2028 || r == 0x2029
}

// needsEscape is Unsafe, and any other rune Go does not count printable
// (zero-width and line-separator characters), but not the space.
func needsEscape(r rune) bool {
	return Unsafe(r) || r != ' ' && !strconv.IsPrint(r)
}

// Escape returns s with every rune that needsEscape and every byte of
// invalid UTF-8 written as a Go escape (\t, \x1b, \u202e, \xff); the rest,
// quotes and backslashes included, is left as it is.
func Escape(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, needsEscape) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case needsEscape(r):
			q := strconv.QuoteRune(r) // 'x' with r escaped as Go would
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Printable is Escape: the name the printing code has used for it.
func Printable(s string) string { return Escape(s) }

// Notice writes msg to w as the plugin's one notice line: prefixed with
// the plugin's name, escaped and on one line (a notice may quote an
// environment variable, a file or an answer of someone else's). Every
// notice and every command's error is printed here.
func Notice(w io.Writer, msg string) {
	fmt.Fprintf(w, "%s%s\n", Prefix, OneLine(msg, 0))
}

// Noticef is Notice of a formatted message.
func Noticef(w io.Writer, format string, args ...any) { Notice(w, fmt.Sprintf(format, args...)) }

// Prefix begins every line the plugin writes for a person (Notice), and
// what a logger of the plugin's writes (record's endpoint's errors).
const Prefix = "kubectl-impersonate: "

// OneLine folds s (an error or an answer's text) into one line: runs of
// white space, newlines included, become one space, and what is left that
// may not reach the terminal is escaped (Escape); more than max bytes (0:
// no limit) are cut at a character boundary and end in "…".
func OneLine(s string, max int) string {
	s = Escape(strings.Join(strings.Fields(s), " "))
	if max <= 0 || len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// SafeOutput returns the first rune of out that the predicate forbids,
// with its byte offset, or -1: Unsafe runes but the newline that ends a
// line, and invalid UTF-8. Tests assert it on every command's stdout and
// stderr.
func SafeOutput(out string) (offset int, r rune) {
	for i := 0; i < len(out); {
		r, size := utf8.DecodeRuneInString(out[i:])
		if r == utf8.RuneError && size == 1 || r != '\n' && Unsafe(r) {
			return i, r
		}
		i += size
	}
	return -1, 0
}

// PrintableList is names escaped (Escape), comma-separated.
func PrintableList(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = Escape(n)
	}
	return strings.Join(out, ", ")
}

// ShellQuote quotes s for a POSIX shell when it needs quoting; a value
// with characters that may not reach the terminal (logging.Unsafe) is
// quoted as bash's $'…' with them escaped (\x1b, \u202e), which bash and
// zsh read back as the same value.
func ShellQuote(s string) string {
	if Escape(s) != s {
		q := strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s)
		return "$'" + Escape(q) + "'"
	}
	safe := s != ""
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.ContainsRune("_@%+=:,./-", c)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func ShellQuoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = ShellQuote(a)
	}
	return out
}
