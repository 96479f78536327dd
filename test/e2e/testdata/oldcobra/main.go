// Command oldcobra prints the bash completion script kubectl 1.26-1.33
// prints for "kubectl completion bash" (k8s.io/kubectl v0.33
// pkg/cmd/completion: GenBashCompletionV2(out, true), with cobra v1.8.1,
// whose script puts the candidates through compgen -W): the script
// test/e2e's TestGateThroughKubectl sources. Regenerate with
//
//	cd test/e2e/testdata/oldcobra && go run . > ../kubectl-1.33-completion.bash
package main

import (
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{Use: "kubectl", Run: func(*cobra.Command, []string) {}}
	if err := root.GenBashCompletionV2(os.Stdout, true); err != nil {
		os.Exit(1)
	}
}
