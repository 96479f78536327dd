package util

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credspec"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/install"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/kubeapi"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/rbac"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/settings"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/tokencache"
)

// KubeFlags are kubectl's own connection flags (--kubeconfig, --context,
// --cluster, --user, -n, --as, --as-group, --as-uid, --request-timeout, ...),
// bound through client-go's clientcmd as kubectl binds them.
type KubeFlags struct {
	rules     *clientcmd.ClientConfigLoadingRules
	overrides clientcmd.ConfigOverrides
	// cc is built once: the deferred config loads the kubeconfig files on
	// first use and keeps them, so the namespace and the client share one load.
	cc clientcmd.ClientConfig
}

// NewKubeFlags binds the flags to fs.
func NewKubeFlags(fs *pflag.FlagSet) *KubeFlags {
	k := &KubeFlags{rules: clientcmd.NewDefaultClientConfigLoadingRules()}
	fs.StringVar(&k.rules.ExplicitPath, "kubeconfig", "", "Path to the kubeconfig file")
	clientcmd.BindOverrideFlags(&k.overrides, fs, clientcmd.RecommendedConfigOverrideFlags(""))
	return k
}

func (k *KubeFlags) ClientConfig() clientcmd.ClientConfig {
	if k.cc == nil {
		k.cc = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(k.rules, &k.overrides)
	}
	return k.cc
}

// NamespaceFlag is -n as given ("" when not given).
func (k *KubeFlags) NamespaceFlag() string { return k.overrides.Context.Namespace }

// Impersonates says whether --as or --as-group is given.
func (k *KubeFlags) Impersonates() bool {
	return k.overrides.AuthInfo.Impersonate != "" || len(k.overrides.AuthInfo.ImpersonateGroups) > 0
}

// Config is the REST configuration the flags select.
func (k *KubeFlags) Config() (*rest.Config, error) {
	cfg, err := k.ClientConfig().ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	if k.overrides.Timeout == "" {
		cfg.Timeout = 30 * time.Second
	}
	cfg.UserAgent = UserAgent()
	return cfg, nil
}

// UserAgent names this tool to the API server (its audit log records it),
// in client-go's form: "kubectl-impersonate/VERSION (OS/ARCH)".
func UserAgent() string {
	v := Version()
	return "kubectl-impersonate/" + v.Version + " (" + v.Platform + ")"
}

// Client builds the API client.
func (k *KubeFlags) Client() (*rbac.Client, *rest.Config, error) {
	cfg, err := k.Config()
	if err != nil {
		return nil, nil, err
	}
	c, err := NewRBACClient(cfg)
	return c, cfg, err
}

// APIClient builds the plain API client (SelfSubjectReview and requests),
// for the commands that need no RBAC evaluation.
func (k *KubeFlags) APIClient() (*kubeapi.Client, error) {
	cfg, err := k.Config()
	if err != nil {
		return nil, err
	}
	return kubeapi.NewClient(cfg)
}

// ImpersonatingClient is a client whose requests carry impersonation
// headers for user and groups, on top of the kubeconfig's identity.
func ImpersonatingClient(cfg *rest.Config, user string, groups []string, uid string, extra map[string][]string) (*rbac.Client, error) {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups, UID: uid, Extra: extra}
	return NewRBACClient(c)
}

// DescribeIdentity is "user [group,...]".
func DescribeIdentity(user string, groups []string) string {
	s := user
	if s == "" {
		s = "(no user)"
	}
	if len(groups) > 0 {
		s += " [" + strings.Join(groups, ",") + "]"
	}
	return s
}

// RegisterCompletions completes --context, --cluster, --user and
// --namespace from the kubeconfig and the API server.
func (k *KubeFlags) RegisterCompletions(cmd *cobra.Command) {
	fromConfig := func(pick func(*clientcmdapi.Config) []string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			raw, err := k.ClientConfig().RawConfig()
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			names := pick(&raw)
			sort.Strings(names)
			return Candidates(names), cobra.ShellCompDirectiveNoFileComp
		}
	}
	_ = cmd.RegisterFlagCompletionFunc("context", fromConfig(func(c *clientcmdapi.Config) []string { return keys(c.Contexts) }))
	_ = cmd.RegisterFlagCompletionFunc("cluster", fromConfig(func(c *clientcmdapi.Config) []string { return keys(c.Clusters) }))
	_ = cmd.RegisterFlagCompletionFunc("user", fromConfig(func(c *clientcmdapi.Config) []string { return keys(c.AuthInfos) }))
	_ = cmd.RegisterFlagCompletionFunc("namespace", func(c *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		client, _, err := k.Client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ns, err := client.Namespaces(c.Context())
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return Candidates(ns), cobra.ShellCompDirectiveNoFileComp
	})
}

// Candidates are the names a completion may offer: cobra writes one a
// line, a tab starting its description, so a name that needs escaping
// (logging.Escape: a newline, a tab, an escape sequence, which no one
// types anyway) would inject candidates or reach the terminal: it is
// left out.
func Candidates(names []string) []string {
	out := names[:0:0]
	for _, n := range names {
		if n != "" && logging.Escape(n) == n {
			out = append(out, n)
		}
	}
	return out
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TokenSource describes where the current kubeconfig user's token comes
// from, when that user runs this plugin. It never holds the token.
type TokenSource struct {
	Issuer    string    `json:"issuer,omitempty"`
	ClientID  string    `json:"clientID,omitempty"`
	GrantType string    `json:"grantType,omitempty"`
	Exchange  string    `json:"exchange,omitempty"`
	Storage   string    `json:"cacheStorage"`
	Expiry    time.Time `json:"expiry,omitzero"`
	Cached    bool      `json:"cached"`
}

var ErrNotOurs = errors.New("the current kubeconfig user does not run kubectl-impersonate (its exec entry runs something else, or it has none)")

// CachedToken reads the current kubeconfig user's token from our cache,
// without logging in: the user's exec entry must run this plugin.
func (k *KubeFlags) CachedToken(ctx context.Context, getenv func(string) string) (string, *TokenSource, error) {
	exec, err := k.currentExec()
	if err != nil {
		return "", nil, err
	}
	if exec == nil {
		return "", nil, ErrNotOurs
	}
	return cachedTokenOf(ctx, exec, getenv)
}

// ExecCommand is the current kubeconfig user's exec command, "" without one.
func (k *KubeFlags) ExecCommand() string {
	if exec, err := k.currentExec(); err == nil && exec != nil {
		return exec.Command
	}
	return ""
}

// ContextUserExec is the exec entry of context's user (default: the
// current context) in kubeconfig (default: kubectl's files), nil without one.
func ContextUserExec(kubeconfig, context string) (*clientcmdapi.ExecConfig, error) {
	k := &KubeFlags{rules: clientcmd.NewDefaultClientConfigLoadingRules()}
	k.rules.ExplicitPath, k.overrides.CurrentContext = kubeconfig, context
	exec, name, found, err := k.userExec()
	if err == nil && !found {
		return nil, fmt.Errorf("the kubeconfig has no context %q: give --context, or the issuer flags", name)
	}
	return exec, err
}

// currentExec is the exec entry of the current context's user (the
// flags' --context and --user win), nil without one.
func (k *KubeFlags) currentExec() (*clientcmdapi.ExecConfig, error) {
	exec, _, _, err := k.userExec()
	return exec, err
}

// userExec is currentExec, with the context's name and whether the
// kubeconfig has it.
func (k *KubeFlags) userExec() (exec *clientcmdapi.ExecConfig, context string, found bool, err error) {
	raw, err := k.ClientConfig().RawConfig()
	if err != nil {
		return nil, "", false, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	context = cmp.Or(k.overrides.CurrentContext, raw.CurrentContext)
	c, found := raw.Contexts[context]
	user := k.overrides.Context.AuthInfo
	if found && user == "" {
		user = c.AuthInfo
	}
	if ai, ok := raw.AuthInfos[user]; ok {
		return ai.Exec, context, found, nil
	}
	return nil, context, found, nil
}

// SettingsOfExec reads the get-token settings of an exec entry that runs
// this plugin (the fast binary, or the full one's get-token), with the
// entry's environment over ours.
func SettingsOfExec(exec *clientcmdapi.ExecConfig, getenv func(string) string) (*settings.AuthOptions, error) {
	return SettingsOfExecOverridden(exec, nil, getenv)
}

// SettingsOfExecOverridden is SettingsOfExec with the flags the user set
// on the command line (user, nil for none) over the entry's.
func SettingsOfExecOverridden(exec *clientcmdapi.ExecConfig, user *settings.AuthOptions, getenv func(string) string) (*settings.AuthOptions, error) {
	if exec == nil {
		return nil, ErrNotOurs
	}
	args := exec.Args
	switch filepath.Base(strings.TrimSuffix(exec.Command, ".exe")) {
	case install.FastBinaryName:
	case install.FullBinaryName:
		if len(args) == 0 || args[0] != "get-token" {
			return nil, ErrNotOurs
		}
		args = args[1:]
	default:
		return nil, ErrNotOurs
	}
	env := map[string]string{}
	names := []string{} // not nil: the entry's env is known
	for _, e := range exec.Env {
		env[e.Name] = e.Value
		names = append(names, e.Name)
	}
	lookup := func(name string) string {
		if v, ok := env[name]; ok {
			return v
		}
		return getenv(name)
	}
	o, err := settings.ParseArgsOverridden(args, user, lookup, func(string) {}, names...)
	if err != nil {
		return nil, fmt.Errorf("reading the exec entry's flags: %w", err)
	}
	return o, nil
}

func cachedTokenOf(ctx context.Context, exec *clientcmdapi.ExecConfig, getenv func(string) string) (string, *TokenSource, error) {
	o, err := SettingsOfExec(exec, getenv)
	if err != nil {
		return "", nil, err
	}
	store, err := o.NewStore(func(string) {})
	if err != nil {
		return "", nil, err
	}
	ts := &TokenSource{Issuer: o.IssuerURL, ClientID: o.ClientID, GrantType: credspec.EffectiveGrant(o.GrantType), Exchange: o.Exchange, Storage: store.Name()}
	if o.Exchange == credspec.ExchangeCloudSigma {
		ts.Issuer, ts.GrantType = o.CloudSigma().Issuer(), "client-credentials + cloudsigma impersonation"
	}
	r, ok, err := o.Source(store, nil, nil).Cached(ctx)
	if err != nil {
		return "", ts, err
	}
	if !ok {
		return "", ts, errors.New("no valid cached token for the current kubeconfig user: run any kubectl command first, or kubectl impersonate login with the same flags")
	}
	ts.Cached, ts.Expiry = true, r.Expiry
	if a, ok := store.(*tokencache.Auto); ok && a.Where() != "" {
		ts.Storage = a.Where()
	}
	return r.Token, ts, nil
}

// NewRBACClient is an rbac.Client for cfg.
func NewRBACClient(cfg *rest.Config) (*rbac.Client, error) {
	c, err := kubeapi.NewClient(cfg)
	if err != nil {
		return nil, err
	}
	r := rbac.New(c)
	r.DiscoveryCache = kubeapi.DiscoveryCacheDir(os.Getenv, cfg.Host)
	return r, nil
}
