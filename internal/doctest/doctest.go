// Package doctest reads the fenced code blocks of the project's Markdown
// docs (README.md and docs/*.md, the generated reference aside) so that
// tests can parse, run and validate what a reader would paste.
//
// A block that cannot run anywhere here (it needs a real cloud account,
// or a pod) opts out with an HTML comment on the line before its fence:
//
//	<!-- doctest: skip: needs a CloudSigma account -->
//
// The tests count opt-outs; everything else is checked.
package doctest

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Block is one fenced code block.
type Block struct {
	File string
	Line int // the line of the opening fence
	Lang string
	Body string
	// Skip is the reason of an opt-out marker, "" when the block is checked.
	Skip string
}

// Where is file:line of the block's fence.
func (b Block) Where() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

// Shell tells whether the block is a shell or console session.
func (b Block) Shell() bool {
	switch b.Lang {
	case "sh", "bash", "shell", "console":
		return true
	}
	return false
}

var (
	fence  = regexp.MustCompile("^```([a-z]*)\\s*$")
	marker = regexp.MustCompile(`^<!--\s*doctest:\s*skip:\s*(.+?)\s*-->\s*$`)
)

// Files are README.md and docs/*.md under root.
func Files(root string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	return append(files, filepath.Join(root, "README.md")), nil
}

// Blocks reads the fenced code blocks of file.
func Blocks(file string) ([]Block, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		blocks []Block
		cur    *Block
		body   strings.Builder
		prev   string
	)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		m := fence.FindStringSubmatch(line)
		switch {
		case cur == nil && m != nil:
			cur = &Block{File: file, Line: n, Lang: m[1]}
			if mm := marker.FindStringSubmatch(prev); mm != nil {
				cur.Skip = mm[1]
			}
			body.Reset()
		case cur != nil && strings.HasPrefix(line, "```"):
			cur.Body = body.String()
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			body.WriteString(line + "\n")
		}
		if strings.TrimSpace(line) != "" {
			prev = line
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("%s: the block opened at line %d is not closed", file, cur.Line)
	}
	return blocks, nil
}

// Line is one command of a shell block, continuation lines joined.
type Line struct {
	Where string
	// Text is the command as the shell reads it, comments dropped.
	Text  string
	Words []string
	// Output is what a console block shows after the command.
	Output []string
}

var backslashSpace = regexp.MustCompile(`\\[ \t]+.*$`)

// Lines splits a shell block into commands: continuation lines joined,
// comments dropped; in a console block only "$ " lines are commands and
// the lines after one are its output. A backslash followed by anything
// but the end of the line is reported as a problem: it escapes the next
// character rather than continuing the line, so a comment after it ends
// the command early and the next line runs on its own.
func (b Block) Lines() (lines []Line, problems []string) {
	var cur strings.Builder
	start := 0
	for i, raw := range strings.Split(strings.TrimSuffix(b.Body, "\n"), "\n") {
		n := b.Line + 1 + i
		line := raw
		if cur.Len() == 0 {
			trimmed := strings.TrimSpace(line)
			if b.Lang == "console" {
				cmd, ok := strings.CutPrefix(trimmed, "$ ")
				if !ok {
					if len(lines) > 0 {
						lines[len(lines)-1].Output = append(lines[len(lines)-1].Output, raw)
					}
					continue
				}
				trimmed = cmd
			}
			line, start = trimmed, n
		} else {
			line = strings.TrimLeft(line, " \t") // a continuation line's indent
		}
		code := stripComment(line)
		if m := backslashSpace.FindString(line); m != "" {
			problems = append(problems, fmt.Sprintf("%s:%d: a backslash before %q does not continue the line", b.File, n, strings.TrimSpace(m[1:])))
			code = ""
		}
		if trimmed := strings.TrimRight(code, " "); strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimRight(strings.TrimSuffix(trimmed, "\\"), " \t") + " ")
			continue
		}
		cur.WriteString(code)
		text := strings.TrimSpace(cur.String())
		cur.Reset()
		if text == "" {
			continue
		}
		lines = append(lines, Line{Where: fmt.Sprintf("%s:%d", b.File, start), Text: text, Words: Fields(text)})
	}
	return lines, problems
}

// stripComment drops a shell comment: "#" at the start of a word, outside
// quotes and not escaped.
func stripComment(s string) string {
	var quote rune
	prevSpace, escaped := true, false
	for i, r := range s {
		switch {
		case escaped:
			escaped = false
		case r == '\\' && quote != '\'':
			escaped = true
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && prevSpace:
			return s[:i]
		}
		prevSpace = r == ' ' || r == '\t'
	}
	return s
}

// Fields splits like a POSIX shell for the docs' quoting ('...', "...",
// and a backslash escaping the next character outside single quotes).
func Fields(s string) []string {
	var out []string
	var b strings.Builder
	var quote rune
	has, escaped := false, false
	for _, r := range s {
		switch {
		case escaped:
			b.WriteRune(r)
			escaped, has = false, true
		case r == '\\' && quote != '\'':
			escaped = true
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			b.WriteRune(r)
		case r == '\'' || r == '"':
			quote, has = r, true
		case r == ' ' || r == '\t':
			if has || b.Len() > 0 {
				out = append(out, b.String())
				b.Reset()
				has = false
			}
		default:
			b.WriteRune(r)
		}
	}
	if has || b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

// Plugin returns the arguments of the first kubectl-impersonate command of
// words ("kubectl impersonate ..." or ".../kubectl-impersonate ..."), up to a
// shell operator, and whether there is one. A flag is not a command, even
// when its value ends in the name (--repository=OWNER/kubectl-impersonate).
func Plugin(words []string) ([]string, bool) {
	for i := 0; i < len(words); i++ {
		if words[i] == "kubectl" && i+1 < len(words) && words[i+1] == "impersonate" {
			return cut(words[i+2:]), true
		}
		if !strings.HasPrefix(words[i], "-") && filepath.Base(words[i]) == "kubectl-impersonate" {
			return cut(words[i+1:]), true
		}
	}
	return nil, false
}

// Operators are the shell operators the docs use between commands.
var Operators = []string{"|", "&&", "||", ";", ">", "<", "2>&1", ">/dev/null"}

func cut(args []string) []string {
	for i, a := range args {
		for _, op := range Operators {
			if a == op {
				return args[:i]
			}
		}
	}
	return args
}

// StackDocs are the docs whose commands need a cluster or a provider:
// test/e2e's TestDocsOnTheStack runs every line of them, in order, on the
// real stack. A command of another doc that needs one must opt out.
var StackDocs = []string{"README.md", "docs/getting-started.md", "docs/dex.md", "docs/inspection.md", "docs/proxy.md", "docs/apiserver-authentication.md"}

// elidedCA is a certificate the docs abbreviate as "...".
var elidedCA = regexp.MustCompile(`(?m)^([ \t]*)-----BEGIN CERTIFICATE-----\n[ \t]*\.\.\.\n(?:[ \t]*-----END CERTIFICATE-----\n)?`)

// WithCA puts pemCA where a doc abbreviates a certificate as "...", as
// the reader pastes their provider's CA there.
func WithCA(doc string, pemCA []byte) string {
	return elidedCA.ReplaceAllStringFunc(doc, func(m string) string {
		indent := elidedCA.FindStringSubmatch(m)[1]
		var b strings.Builder
		for _, l := range strings.Split(strings.TrimSpace(string(pemCA)), "\n") {
			b.WriteString(indent + l + "\n")
		}
		return b.String()
	})
}
