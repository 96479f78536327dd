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

// TestOneFlagNamePerMeaning: the provider's CA is --oidc-certificate-authority
// wherever a command talks to a provider; --certificate-authority is the
// cluster's CA in the commands with kubectl's connection flags (and a hidden
// alias of the provider's CA, kubelogin's name, in the others); older names
// are hidden or deprecated, never shown in --help.
func TestOneFlagNamePerMeaning(t *testing.T) {
	root := NewRootCmd(genericiooptions.NewTestIOStreamsDiscard())
	hiddenNames := []string{"issuer-certificate-authority", "oidc-ca-file", "oidc-audience", "verbs", "client-id",
		"username-claim", "username-prefix", "groups-claim", "groups-prefix", "audit-log"}
	for _, c := range Commands(root) {
		t.Run(c.CommandPath(), func(t *testing.T) {
			f := c.Flags()
			for _, n := range hiddenNames {
				fl := f.Lookup(n)
				if fl == nil || n == "audit-log" && c.Name() == "proxy" {
					continue // the proxy's --audit-log logs every request
				}
				assert.True(t, fl.Hidden || fl.Deprecated != "", "--%s is an older name: hidden or deprecated", n)
			}
			ca := f.Lookup("certificate-authority")
			if ca == nil {
				return
			}
			if f.Lookup("as") != nil { // kubectl's connection flags
				assert.False(t, ca.Hidden, "--certificate-authority is the cluster's CA, as in kubectl")
				assert.Contains(t, ca.Usage, "certificate authority")
				return
			}
			assert.True(t, ca.Hidden, "--certificate-authority is kubelogin's alias of --oidc-certificate-authority")
			assert.NotNil(t, f.Lookup("oidc-certificate-authority"))
		})
	}
}
