package cmd

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
)

// TestRegistryNames: each registry entry names its command and aliases,
// and a command line naming one builds that command alone, flags and
// help included.
func TestRegistryNames(t *testing.T) {
	streams := genericiooptions.NewTestIOStreamsDiscard()
	whole := newRootCmd(streams, cmdutil.NewGlobalOptions(nil, nil))
	require.Len(t, whole.Commands(), len(commands))
	for _, entry := range commands {
		c, _, err := whole.Find(entry.names[:1])
		require.NoError(t, err)
		assert.Equal(t, append([]string{c.Name()}, c.Aliases...), entry.names)
		for _, name := range entry.names {
			one := newRootCmd(streams, cmdutil.NewGlobalOptions(nil, []string{name, "--help"}))
			require.Len(t, one.Commands(), 1, name)
			assert.Equal(t, c.Name(), one.Commands()[0].Name())
			assert.Equal(t, c.Flags().FlagUsages(), one.Commands()[0].Flags().FlagUsages(), name)
		}
	}
	for _, args := range [][]string{nil, {"help"}, {"__complete", "get-token", "--"}, {"-v=2", "whoami"}, {"nosuch"}} {
		assert.Len(t, newRootCmd(streams, cmdutil.NewGlobalOptions(nil, args)).Commands(), len(commands), "%q", args)
	}
}
