package cmd

import (
	"strings"

	"github.com/spf13/cobra"
)

func visit(c *cobra.Command, f func(*cobra.Command)) {
	f(c)
	for _, sub := range c.Commands() {
		visit(sub, f)
	}
}

// Commands lists the tree's commands by path, without cobra's own help
// and completion commands.
func Commands(root *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	visit(root, func(c *cobra.Command) {
		if c.Name() == "help" || strings.HasPrefix(c.CommandPath(), root.Name()+" completion") {
			return
		}
		out = append(out, c)
	})
	return out
}
