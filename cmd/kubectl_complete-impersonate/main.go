// Command kubectl_complete-impersonate completes "kubectl impersonate ...".
//
//   - kubectl (1.26+) runs it, found on PATH by that name, with the words
//     typed so far.
//   - It hands them to "kubectl-impersonate __complete" beside it (cobra's
//     completion protocol: candidates, then a directive line).
//
// Krew
// links one executable per plugin, so "kubectl impersonate setup
// --write-completion" copies this one beside Krew's link: a copy, not a
// link, so that "kubectl krew upgrade" (which replaces the store) leaves it
// working and "kubectl krew uninstall" leaves nothing dangling (with the
// plugin gone it answers no candidates). It links nothing but pkg/host/install.
package main

import (
	"fmt"
	"os"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/environ"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/install"
)

func main() {
	full, err := install.Next(install.FullBinaryName)
	if err != nil {
		// The plugin is gone (or installed apart): no candidates, and no
		// files either (cobra's ShellCompDirectiveNoFileComp).
		fmt.Println(":4")
		os.Exit(0)
	}
	os.Exit(install.Run(full, append([]string{"__complete"}, os.Args[1:]...), environ.Environ()))
}
