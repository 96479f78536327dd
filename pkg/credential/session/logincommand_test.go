package session

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testfs"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/settings"
)

// TestLoginCommandNamesTheContext: the login hint names the context of
// the process's default kubeconfig whose exec entry is exactly this run's
// (its args, get-token's name aside, and its env as the process has it),
// the current one first; anything else, or a Process that knows nothing
// (issue 48: the hint read os.Args, os.Getenv and the kubeconfig itself),
// gets the login command with the run's flags.
func TestLoginCommandNamesTheContext(t *testing.T) {
	entry := []string{"--oidc-issuer-url=https://idp.example.com", "--oidc-client-id=k8s"}
	exec := func(args []string, env ...clientcmdapi.ExecEnvVar) *clientcmdapi.AuthInfo {
		return &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "kubectl-impersonate", Args: args, Env: env, APIVersion: "client.authentication.k8s.io/v1"}}
	}
	kubeconfig := func(current string) *clientcmdapi.Config {
		c := clientcmdapi.NewConfig()
		c.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://k8s.example.com"}
		c.AuthInfos["mine"] = exec(append([]string{"get-token"}, entry...), clientcmdapi.ExecEnvVar{Name: "TENANT", Value: "a"})
		c.AuthInfos["mine-again"] = exec(append([]string{"get-token"}, entry...), clientcmdapi.ExecEnvVar{Name: "TENANT", Value: "a"})
		// Someone else's entry of the same identity, with a program to run.
		c.AuthInfos["theirs"] = exec(append(append([]string{"get-token"}, entry...), "--browser-command=/tmp/evil"))
		for _, n := range []string{"mine", "mine-again", "theirs"} {
			c.Contexts[n] = &clientcmdapi.Context{Cluster: "c", AuthInfo: n}
		}
		c.CurrentContext = current
		return c
	}
	env := map[string]string{"TENANT": "a", "HOME": testfs.HomeOnlyEnv("HOME"), "USERPROFILE": testfs.HomeOnlyEnv("USERPROFILE")}
	a, _, err := settings.ParseArgs(entry, testfs.HomeOnlyEnv, func(string) {})
	require.NoError(t, err)
	flags := "kubectl impersonate login --oidc-client-id=k8s --oidc-issuer-url=https://idp.example.com"
	for _, tt := range []struct {
		name string
		p    Process
		want string
	}{
		// The current context is someone else's entry of the same identity:
		// not this run's, not named.
		{"this run's entry", Process{Args: append([]string{"get-token"}, entry...), Getenv: func(k string) string { return env[k] },
			Kubeconfig: func() (*clientcmdapi.Config, error) { return kubeconfig("theirs"), nil }}, "kubectl impersonate login --context=mine"},
		{"the current context first", Process{Args: entry, Getenv: func(k string) string { return env[k] },
			Kubeconfig: func() (*clientcmdapi.Config, error) { return kubeconfig("mine-again"), nil }}, "kubectl impersonate login --context=mine-again"},
		{"the entry's env is not the process's", Process{Args: entry, Getenv: func(string) string { return "b" },
			Kubeconfig: func() (*clientcmdapi.Config, error) { return kubeconfig(""), nil }}, flags},
		{"args no entry has", Process{Args: append(entry, "--force-refresh"), Getenv: func(k string) string { return env[k] },
			Kubeconfig: func() (*clientcmdapi.Config, error) { return kubeconfig(""), nil }}, flags},
		{"no kubeconfig", Process{Args: entry, Getenv: func(k string) string { return env[k] },
			Kubeconfig: func() (*clientcmdapi.Config, error) { return nil, errors.New("no kubeconfig") }}, flags},
		{"a Process that knows nothing", Process{}, flags},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, LoginCommand(a, tt.p))
		})
	}
}
