package logging

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// SafeWriter is the last line of defence of a stream that reaches a
// terminal: whatever a caller forgot to Escape, it passes to W all but what
// the predicate forbids (Unsafe runes other than the newline and the tab,
// invalid UTF-8), which it writes as \uXXXX (so that a JSON document stays
// valid and its strings equal) or \xNN. Tabs pass: the plugin's own
// (completion's candidate and description, a jsonpath template's {"\t"})
// are meant, and text of others' in a table cell or a jsonpath value is
// escaped where it is printed. A character split across writes is held
// until its end arrives; Flush writes what is left. Safe for concurrent
// use (klog and a command's notices may write at once).
type SafeWriter struct {
	W       io.Writer
	mu      sync.Mutex
	pending []byte
}

// NewSafeWriter wraps w.
func NewSafeWriter(w io.Writer) *SafeWriter { return &SafeWriter{W: w} }

// Write escapes p and writes it; it reports len(p) when W took everything.
func (s *SafeWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	buf := append(s.pending, p...)
	s.pending = nil
	out := make([]byte, 0, len(buf))
	clean := true
	i := 0
	for i < len(buf) {
		r, size := utf8.DecodeRune(buf[i:])
		if r == utf8.RuneError && size <= 1 {
			if !utf8.FullRune(buf[i:]) {
				s.pending = append([]byte(nil), buf[i:]...) // the rest comes with the next write
				break
			}
			out = fmt.Appendf(out, `\x%02x`, buf[i])
			clean = false
		} else if r != '\n' && r != '\t' && Unsafe(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
			clean = false
		} else {
			out = append(out, buf[i:i+size]...)
		}
		i += size
	}
	if clean && s.pending == nil && len(out) == len(p) {
		out = p
	}
	if _, err := s.W.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a character left incomplete by the last write, escaped.
func (s *SafeWriter) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) == 0 {
		return nil
	}
	var out []byte
	for _, b := range s.pending {
		out = fmt.Appendf(out, `\x%02x`, b)
	}
	s.pending = nil
	_, err := s.W.Write(out)
	return err
}

// Raw is the stream under w when w is a SafeWriter, else w: for what the
// plugin writes to a terminal on purpose (a progress line's carriage
// return and erase-line sequence), and to ask whether it is a terminal.
func Raw(w any) any {
	if s, ok := w.(*SafeWriter); ok {
		return s.W
	}
	return w
}

// EraseLine returns to the start of a terminal's line and erases it.
const EraseLine = "\r\033[K"

// StatusLine writes msg (escaped) on w, a terminal, over the line written
// last; "" only erases it. The sequences go to the terminal itself (Raw).
func StatusLine(w io.Writer, msg string) {
	raw, ok := Raw(w).(io.Writer)
	if !ok {
		return
	}
	_, _ = io.WriteString(raw, EraseLine+Escape(msg))
}

// LineWriter is for a logger that writes one entry a Write (klog): each
// entry is escaped (Escape) but for the newline that ends it, so that a
// message quoting someone else's text is one line.
type LineWriter struct{ W io.Writer }

func (l LineWriter) Write(p []byte) (int, error) {
	s := string(p)
	end := ""
	if t, ok := strings.CutSuffix(s, "\n"); ok {
		s, end = t, "\n"
	}
	if _, err := io.WriteString(l.W, Escape(s)+end); err != nil {
		return 0, err
	}
	return len(p), nil
}

// EscapeJSON is b, a JSON document, with what the predicate forbids and
// encoding/json leaves as it is (DEL, C1 controls, bidirectional
// overrides) written as \uXXXX: the same document, safe on a terminal.
func EscapeJSON(b []byte) []byte {
	var out bytes.Buffer
	w := NewSafeWriter(&out)
	_, _ = w.Write(b)
	_ = w.Flush()
	return out.Bytes()
}
