package util

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestSessionEnvPromptsOnTheTerminal: an interactive run whose stderr is
// not a terminal (the Python client captures it) writes the login's
// prompts to the controlling terminal too, escaped; a run with stderr a
// terminal, or not interactive, or without a terminal, does not.
func TestSessionEnvPromptsOnTheTerminal(t *testing.T) {
	tests := []struct {
		name                  string
		interactive, stderrTT bool
		noTerminal            bool
		wantOnTerminal        bool
	}{
		{name: "interactive, stderr captured", interactive: true, wantOnTerminal: true},
		{name: "interactive, stderr a terminal", interactive: true, stderrTT: true},
		{name: "not interactive", interactive: false},
		{name: "interactive, no controlling terminal", interactive: true, noTerminal: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr, tty bytes.Buffer
			opened := 0
			g := &GlobalOptions{IsTerminal: func(any) bool { return tt.stderrTT }, OpenTerminal: func() (io.Writer, error) {
				opened++
				if tt.noTerminal {
					return nil, errors.New("no terminal")
				}
				return &tty, nil
			}}
			env := g.SessionEnv(genericiooptions.IOStreams{ErrOut: &stderr}, SessionMode{Interactive: tt.interactive})
			assert.Zero(t, opened, "nothing opened before a prompt")
			fmt.Fprintf(env.ErrOut, "Open https://idp.example.com/device and enter the code ABCD-EFGH\x1b]0;pwned\x07\n")
			fmt.Fprintf(env.ErrOut, "Code: ")
			assert.Contains(t, stderr.String(), "enter the code ABCD-EFGH", "stderr has everything still")
			if tt.wantOnTerminal {
				assert.Equal(t, 1, opened, "opened once")
				assert.Contains(t, tty.String(), "enter the code ABCD-EFGH")
				assert.Contains(t, tty.String(), "Code: ")
				assert.NotContains(t, tty.String(), "\x1b", "escaped on the terminal")
			} else {
				assert.Empty(t, tty.String())
			}
		})
	}
}
