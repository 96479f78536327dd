package cmd

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Every command's --help has a one-line summary, a longer description and
// runnable examples that call the command itself.
func TestHelpIsComplete(t *testing.T) {
	root := NewRootCmd(genericiooptions.NewTestIOStreamsDiscard())
	cmds := Commands(root)
	assert.GreaterOrEqual(t, len(cmds), 15)
	for _, c := range cmds {
		t.Run(c.CommandPath(), func(t *testing.T) {
			assert.NotEmpty(t, c.Short, "summary")
			assert.NotContains(t, c.Short, "\n", "the summary is one line")
			assert.NotEmpty(t, c.Long, "description")
			if c.HasSubCommands() && !c.Runnable() {
				return // a group: its subcommands have the examples
			}
			if assert.NotEmpty(t, c.Example, "examples") {
				assert.Contains(t, c.Example, " "+c.Name(), "the examples run the command")
			}
		})
	}
}
