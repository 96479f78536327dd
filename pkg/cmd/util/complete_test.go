package util

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testfs"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/resource"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/kuberc"
)

func TestResourceNames(t *testing.T) {
	all := []resource.Resource{
		{Version: "v1", Name: "pods", Kind: "Pod", ShortNames: []string{"po"}},
		{Version: "v1", Name: "pods/log", Kind: "Pod"},
		{Version: "v1", Name: "events", Kind: "Event", ShortNames: []string{"ev"}},
		{Group: "events.k8s.io", Version: "v1", Name: "events", Kind: "Event", ShortNames: []string{"ev"}},
		{Group: "apps", Version: "v1", Name: "deployments", Kind: "Deployment", ShortNames: []string{"deploy"}},
	}
	for _, tt := range []struct {
		typed string
		want  []string
	}{
		{"po", []string{"po", "pods"}},
		{"P", []string{"Pod"}},
		{"pods/", []string{"pods/log"}},
		{"ev", []string{"ev", "events", "events.events.k8s.io"}},
		{"dep", []string{"deploy", "deployments", "deployments.apps"}},
		{"nothing", nil},
	} {
		t.Run(tt.typed, func(t *testing.T) {
			assert.Equal(t, tt.want, prefixed(resourceNames(all, tt.typed), tt.typed))
		})
	}
}

// TestCandidatesAreSafe: a name that needs escaping (a newline would make
// a second candidate, a tab a description, an escape reach the terminal)
// is never offered.
func TestCandidatesAreSafe(t *testing.T) {
	got, d := Values("prod", "evil\ninjected", "tab\tdescription", "esc\x1b[2J", "staging")(nil, nil, "")
	assert.Equal(t, []string{"prod", "staging"}, got)
	assert.Equal(t, cobra.ShellCompDirectiveNoFileComp, d)
}

func TestListCompletions(t *testing.T) {
	cmd := &cobra.Command{Use: "x"}
	cmd.Flags().StringSlice("verb", nil, "")
	RegisterListCompletions(cmd, "verb", Values("get", "list", "watch"))
	f, ok := cmd.GetFlagCompletionFunc("verb")
	require.True(t, ok)
	got, d := f(cmd, nil, "get,l")
	assert.Equal(t, []string{"get,list"}, got, "the values typed are kept")
	assert.NotZero(t, d&cobra.ShellCompDirectiveNoSpace, "another value may follow")
	got, _ = f(cmd, nil, ",w")
	assert.Equal(t, []string{",watch"}, got, "an empty first value")
	got, _ = f(cmd, nil, "w")
	assert.Equal(t, []string{"watch"}, got, "the first value")
}

// TestCompletionConfig: a completion asks the API server with the
// context's cached token when its user runs this plugin (no exec entry
// run, so no login: none cached, no client), and runs no other plugin.
func TestCompletionConfig(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	kc := filepath.Join(home, "kubeconfig")
	require.NoError(t, os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
current-context: ours
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443"}
contexts:
- name: ours
  context: {cluster: c, user: ours}
- name: theirs
  context: {cluster: c, user: theirs}
- name: provider
  context: {cluster: c, user: provider}
- name: static
  context: {cluster: c, user: static}
users:
- name: ours
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: kubectl-impersonate-get_token
      args: [--oidc-issuer-url=https://idp.example.com, --oidc-client-id=k, --token-cache-storage=disk, "--token-cache-dir=`+filepath.Join(home, "cache")+`"]
      interactiveMode: IfAvailable
- name: theirs
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: some-other-plugin
      interactiveMode: Always
- name: provider
  user:
    auth-provider:
      name: oidc
      config: {idp-issuer-url: "https://idp.example.com", client-id: k, id-token: x}
- name: static
  user: {token: static-token}
`), 0o600))
	flags := func(context string) *KubeFlags {
		cmd := &cobra.Command{Use: "x"}
		k := NewKubeFlags(cmd.Flags(), testfs.HomeOnlyEnv)
		require.NoError(t, cmd.ParseFlags([]string{"--kubeconfig=" + kc, "--context=" + context}))
		return k
	}
	_, err := flags("ours").completionConfig(context.Background())
	require.Error(t, err, "nothing cached: no client, and no login")
	assert.Contains(t, err.Error(), "no valid cached token")

	for _, c := range []string{"theirs", "provider"} {
		_, err = flags(c).completionConfig(context.Background())
		require.Error(t, err, "%s: another credential plugin never runs on TAB", c)
		assert.Contains(t, err.Error(), "runs no credential plugin")
	}
	cfg, err := flags("static").completionConfig(context.Background())
	require.NoError(t, err, "a static credential is the user's own")
	assert.Equal(t, "static-token", cfg.BearerToken)
	assert.Equal(t, CompletionTimeout, cfg.Timeout)
}

// TestCandidates: only names every completion script since kubectl 1.26
// takes as they are (issue 46: cobra 1.8's compgen -W runs "$(...)" and
// backticks); anything else a kubeconfig or a server could name is left
// out.
func TestCandidates(t *testing.T) {
	keep := []string{"default", "kube-system", "azAZ09", "z", "Z", "A", "a", "0", "9", "deployments.apps", "pods/log", "jsonpath=", "get,list", "impersonate:user-info",
		"arn:aws:eks:us-east-1:123456789012:cluster/prod", "gke_project_europe-west1_prod", "alice@example.com", "a+b", strings.Repeat("a", 253)}
	drop := []string{"", "$(id)", "`id`", "a b", "a\tb", "a\nb", "a;b", "a|b", "a&b", "a>b", "a<b", "'a'", `"a"`, `a\b`, "a*", "a?", "[a]", "~root",
		"{a,b}", "a!b", "-rf", "--kubeconfig=/tmp/x", "é", "a\u202eb", "a\x1b[31m", "a%b", "a#b", strings.Repeat("a", 254)}
	assert.Equal(t, keep, Candidates(append(append([]string{}, keep...), drop...)))
	for _, n := range drop {
		assert.Empty(t, Candidates([]string{n}), "%q", n)
	}
}

// TestClientGoPolicy: the kuberc's policy in client-go's form, an empty
// allowlist kept empty (client-go refuses it as empty, not as missing).
func TestClientGoPolicy(t *testing.T) {
	assert.Equal(t, clientcmdapi.PluginPolicy{}, clientGoPolicy(kuberc.PluginPolicy{}))
	assert.Equal(t, clientcmdapi.PluginPolicy{PolicyType: clientcmdapi.PluginPolicyDenyAll}, clientGoPolicy(kuberc.PluginPolicy{Type: "DenyAll"}))
	assert.Equal(t, clientcmdapi.PluginPolicy{PolicyType: clientcmdapi.PluginPolicyAllowlist, Allowlist: []clientcmdapi.AllowlistEntry{}},
		clientGoPolicy(kuberc.PluginPolicy{Type: "Allowlist", Commands: []string{}}))
	assert.Equal(t, clientcmdapi.PluginPolicy{PolicyType: clientcmdapi.PluginPolicyAllowlist, Allowlist: []clientcmdapi.AllowlistEntry{{Command: "a"}, {Command: "/usr/bin/b"}}},
		clientGoPolicy(kuberc.PluginPolicy{Type: "Allowlist", Commands: []string{"a", "/usr/bin/b"}}))
}
