package util

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/settings"
)

// GroupedUsage prints the usage of a command that takes get-token's
// settings with its flags in sections (settings.FlagGroups), then the
// command's own flags, then the global ones.
func GroupedUsage(c *cobra.Command) error {
	out := c.OutOrStderr()
	fmt.Fprintf(out, "Usage:\n  %s\n", c.UseLine())
	if c.HasExample() {
		fmt.Fprintf(out, "\nExamples:\n%s\n", c.Example)
	}
	local := c.LocalNonPersistentFlags()
	seen := map[string]bool{}
	section := func(title string, fs *pflag.FlagSet) {
		if fs.HasAvailableFlags() {
			fmt.Fprintf(out, "\n%s:\n%s", title, fs.FlagUsages())
		}
	}
	for _, g := range settings.FlagGroups {
		fs := pflag.NewFlagSet(g.Title, pflag.ContinueOnError)
		fs.SortFlags = false // the table's order: the usual ones first
		for _, name := range g.Flags {
			if f := local.Lookup(name); f != nil {
				fs.AddFlag(f)
				seen[name] = true
			}
		}
		section(g.Title, fs)
	}
	own := pflag.NewFlagSet("own", pflag.ContinueOnError)
	local.VisitAll(func(f *pflag.Flag) {
		if !seen[f.Name] {
			own.AddFlag(f)
		}
	})
	section("Flags of "+c.Name(), own)
	section("Global Flags", c.InheritedFlags())
	return nil
}
