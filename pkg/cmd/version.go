package cmd

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
)

// NewCmdVersion builds version.
func NewCmdVersion(streams genericiooptions.IOStreams) *cobra.Command {
	var output *cmdutil.OutputFlags
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Long: `version prints the version stamped into the release build (or the module
version of a go install), the commit, the Go version and the platform.`,
		Example: `  kubectl impersonate version
  kubectl impersonate version -o json`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := output.Validate(); err != nil {
				return err
			}
			v := cmdutil.Version()
			return output.Print(streams.Out, v, func(w io.Writer) {
				fmt.Fprintf(w, "kubectl-impersonate %s (%s, %s)\n", v.Version, v.GoVersion, v.Platform)
			})
		},
	}
	output = cmdutil.NewOutputFlags(cmd.Flags(), "text")
	return cmd
}
