package cmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/settings"
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

// TestHelpGroupsFlags: the commands that take get-token's settings list
// their flags in sections by grant and purpose (kubelogin's [authcode] …
// marks, gathered), each visible flag exactly once, and every flag the
// sections name exists.
func TestHelpGroupsFlags(t *testing.T) {
	for _, name := range []string{"get-token", "login", "setup", "logout", "cloudsigma whoami"} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			root := NewRootCmd(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &out})
			root.SetArgs(append(strings.Fields(name), "--help"))
			require.NoError(t, root.Execute())
			c, _, err := root.Find(strings.Fields(name))
			require.NoError(t, err)
			help := out.String()
			// The section of each line.
			section := map[string]string{}
			current := ""
			_, usage, _ := strings.Cut(help, "\nUsage:\n")
			for _, line := range strings.Split("Usage:\n"+usage, "\n") {
				if strings.HasSuffix(line, ":") && !strings.HasPrefix(line, " ") {
					current = strings.TrimSuffix(line, ":")
					continue
				}
				if current == "" || current == "Usage" || current == "Examples" {
					continue
				}
				fields := strings.Fields(line)
				for _, f := range fields[:min(2, len(fields))] {
					if strings.HasPrefix(f, "--") {
						flag := strings.TrimSuffix(f[2:], ",")
						assert.NotContains(t, section, flag, "--%s is listed once", flag)
						section[flag] = current
					}
				}
			}
			var last int
			for i, g := range settings.FlagGroups {
				at := strings.Index(help, "\n"+g.Title+":\n")
				require.Positive(t, at, "the section %q", g.Title)
				assert.Greater(t, at, last, "the sections in order")
				last = at
				for _, f := range g.Flags {
					require.NotNil(t, c.Flags().Lookup(f), "--%s of section %d exists", f, i)
					assert.Equal(t, g.Title, section[f], "--%s is in its section", f)
				}
			}
			c.Flags().VisitAll(func(f *pflag.Flag) {
				if !f.Hidden {
					assert.Contains(t, section, f.Name, "--%s is listed", f.Name)
				}
			})
		})
	}
}
