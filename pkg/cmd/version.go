package cmd

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Set by the release build: -ldflags "-X .../pkg/cmd.version=v1.2.3 -X .../pkg/cmd.commit=abc".
var (
	version = ""
	commit  = ""
)

// VersionInfo is what version prints.
type VersionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Version returns the build's version: the ldflags stamp, else the module
// version of a "go install", else "devel".
func Version() VersionInfo {
	v := VersionInfo{Version: version, Commit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if v.Version == "" {
		v.Version = "devel"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
	}
	return v
}

// NewCmdVersion builds version.
func NewCmdVersion(streams genericiooptions.IOStreams) *cobra.Command {
	var output *OutputFlags
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
			v := Version()
			return output.Print(streams.Out, v, func(w io.Writer) {
				fmt.Fprintf(w, "kubectl-impersonate %s (%s, %s)\n", v.Version, v.GoVersion, v.Platform)
			})
		},
	}
	output = NewOutputFlags(cmd.Flags(), "text")
	return cmd
}
