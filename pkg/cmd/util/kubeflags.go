package util

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/kubeapi"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbac"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/session"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/kuberc"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/jwtclaims"
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
	// Getenv reads the environment (GlobalOptions.Env): $KUBERC, the
	// sessions' settings.
	Getenv func(string) string
}

func (k *KubeFlags) getenv(name string) string { return k.Getenv(name) }

// NewKubeFlags binds the flags to fs; getenv reads the environment (a
// command's GlobalOptions.Env).
func NewKubeFlags(fs *pflag.FlagSet, getenv func(string) string) *KubeFlags {
	return NewKubeFlagsTimeout(fs, getenv, DefaultCommandTimeout)
}

// NewKubeFlagsTimeout is NewKubeFlags with --command-timeout's default
// (record's is none: a recorded test suite runs as long as it runs).
func NewKubeFlagsTimeout(fs *pflag.FlagSet, getenv func(string) string, timeout time.Duration) *KubeFlags {
	k := &KubeFlags{rules: defaultRules(), Getenv: getenv}
	fs.StringVar(&k.rules.ExplicitPath, "kubeconfig", "", "Path to the kubeconfig file")
	fs.Duration(FlagCommandTimeout, timeout, "The longest the whole command may take: every request, "+
		"page and credential plugin in it (0: no limit)")
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

// ContextFlag is --context as given ("" when not given).
func (k *KubeFlags) ContextFlag() string { return k.overrides.CurrentContext }

// ServerFlag is --server as given ("" when not given).
func (k *KubeFlags) ServerFlag() string { return k.overrides.ClusterInfo.Server }

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
	if cfg.ExecProvider != nil {
		// The user's kuberc decides which credential plugins run, for the
		// plugin's clients as for kubectl's.
		policy, err := kuberc.Policy(k.getenv)
		if err != nil {
			return nil, fmt.Errorf("reading the kuberc's credential plugin policy: %w", err)
		}
		cfg.ExecProvider.PluginPolicy = clientGoPolicy(policy)
	}
	return cfg, nil
}

// clientGoPolicy is p in client-go's form, which client-go's exec
// authenticator enforces.
func clientGoPolicy(p kuberc.PluginPolicy) clientcmdapi.PluginPolicy {
	out := clientcmdapi.PluginPolicy{PolicyType: clientcmdapi.PolicyType(p.Type)}
	if p.Commands != nil {
		out.Allowlist = make([]clientcmdapi.AllowlistEntry, 0, len(p.Commands))
		for _, c := range p.Commands {
			out.Allowlist = append(out.Allowlist, clientcmdapi.AllowlistEntry{Command: c})
		}
	}
	return out
}

// GatedConfig is the configuration a client of the plugin's own sends the
// selected context's cached token with, bound to the cluster the flags
// select (session.Gate: every rule get-token applies); session.ErrNotOurs
// when the context's user does not run this plugin.
func (k *KubeFlags) GatedConfig(ctx context.Context) (*rest.Config, *session.TokenSource, error) {
	cfg, err := k.Config()
	if err != nil {
		return nil, nil, err
	}
	s, err := k.Session(k.getenv)
	if err != nil {
		return nil, nil, err
	}
	return s.Gate(ctx, cfg, nil)
}

// TokenClaims are the claims of the token this plugin cached for the
// context (none when the context's user does not run it, or none is
// cached): their string values, by name.
func (k *KubeFlags) TokenClaims(ctx context.Context) map[string][]string {
	cfg, _, err := k.GatedConfig(ctx)
	if err != nil {
		return nil
	}
	tok, err := jwtclaims.Decode(cfg.BearerToken)
	if err != nil {
		return nil
	}
	out := map[string][]string{}
	for name := range tok.Claims {
		if vs := tok.Strings(name); len(vs) > 0 {
			out[name] = vs
		}
	}
	return out
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
	c, err := k.rbacClient(cfg)
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

// IdentityClients are an inspection's clients: Caller is the kubeconfig's
// own identity, --as aside (it lists namespaces, objects and RBAC objects
// with the caller's rights: an admin asking about alice may list them,
// alice may not); Target is the identity the flags select (Caller itself
// unless --as or --as-group is given); Impersonate makes a client acting
// as another identity (--token-identity, --diff-as).
type IdentityClients struct {
	Caller, Target *rbac.Client
	// Impersonated says --as or --as-group selected Target.
	Impersonated bool
	Impersonate  func(user string, groups []string, uid string, extra map[string][]string) (*rbac.Client, error)
	// Target's description: "you", or the identity --as names.
	Identity string
	// Grant is the sudo grant (elevation.Ref) Target's impersonation names
	// in its one extra elevation.GrantExtra, as kubectl impersonate sudo's
	// kubeconfigs do, for the user it impersonates (GrantUser); "" when
	// none.
	Grant, GrantUser string
}

// IdentityClients builds the clients of the flags' configuration.
func (k *KubeFlags) IdentityClients() (*IdentityClients, error) {
	cfg, err := k.Config()
	if err != nil {
		return nil, err
	}
	callerCfg := rest.CopyConfig(cfg)
	callerCfg.Impersonate = rest.ImpersonationConfig{}
	ic := &IdentityClients{Identity: "you",
		Impersonate: func(user string, groups []string, uid string, extra map[string][]string) (*rbac.Client, error) {
			return k.impersonatingClient(cfg, user, groups, uid, extra)
		}}
	if ic.Caller, err = k.rbacClient(callerCfg); err != nil {
		return nil, err
	}
	ic.Target = ic.Caller
	if imp := cfg.Impersonate; imp.UserName != "" || len(imp.Groups) > 0 {
		if ic.Target, err = k.rbacClient(cfg); err != nil {
			return nil, err
		}
		ic.Impersonated, ic.Identity = true, DescribeIdentity(imp.UserName, imp.Groups)
	}
	if refs := cfg.Impersonate.Extra[elevation.GrantExtra]; len(refs) == 1 {
		ic.Grant, ic.GrantUser = refs[0], cfg.Impersonate.UserName
	}
	return ic, nil
}

// impersonatingClient is a client whose requests carry impersonation
// headers for user and groups, on top of the kubeconfig's identity.
func (k *KubeFlags) impersonatingClient(cfg *rest.Config, user string, groups []string, uid string,
	extra map[string][]string) (*rbac.Client, error) {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups, UID: uid, Extra: extra}
	return k.rbacClient(c)
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
	type completeFunc = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective)
	fromConfig := func(pick func(*clientcmdapi.Config) []string) completeFunc {
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
	_ = cmd.RegisterFlagCompletionFunc("context",
		fromConfig(func(c *clientcmdapi.Config) []string { return keys(c.Contexts) }))
	_ = cmd.RegisterFlagCompletionFunc("cluster",
		fromConfig(func(c *clientcmdapi.Config) []string { return keys(c.Clusters) }))
	_ = cmd.RegisterFlagCompletionFunc("user",
		fromConfig(func(c *clientcmdapi.Config) []string { return keys(c.AuthInfos) }))
	_ = cmd.RegisterFlagCompletionFunc("namespace", k.CompleteNamespaces)
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// ExecCommand is the current kubeconfig user's exec command, "" without one.
func (k *KubeFlags) ExecCommand() string {
	raw, err := k.ClientConfig().RawConfig()
	if err != nil {
		return ""
	}
	s := k.selection()
	user := s.User
	if c, ok := raw.Contexts[cmp.Or(s.Context, raw.CurrentContext)]; ok && user == "" {
		user = c.AuthInfo
	}
	if ai, ok := raw.AuthInfos[user]; ok && ai.Exec != nil {
		return ai.Exec.Command
	}
	return ""
}

// selection is the context, user and cluster the flags choose.
func (k *KubeFlags) selection() session.Selection {
	return session.Selection{Context: k.overrides.CurrentContext, User: k.overrides.Context.AuthInfo,
		Cluster: k.overrides.Context.Cluster}
}

// Session is the session of the context the flags select (kubectl's
// current one by default): session.ErrNotOurs when its user does not run
// this plugin.
func (k *KubeFlags) Session(getenv func(string) string) (*session.Session, error) {
	raw, err := k.ClientConfig().RawConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	return session.Current(&raw, k.selection(), nil, getenv)
}

// rbacClient is an rbac.Client for cfg, its discovery cached where
// kubectl's is ($KUBECACHEDIR, else ~/.kube/cache).
func (k *KubeFlags) rbacClient(cfg *rest.Config) (*rbac.Client, error) {
	c, err := kubeapi.NewClient(cfg)
	if err != nil {
		return nil, err
	}
	r := rbac.New(c)
	r.DiscoveryCache = kubeapi.DiscoveryCacheDir(k.getenv, cfg.Host)
	return r, nil
}

// defaultRules are kubectl's kubeconfig loading rules: client-go reads
// $KUBECONFIG and the home directory itself, as it does for kubectl (the
// one read of the process below cmd/ that is not pkg/host/environ's,
// TestProcessGlobals).
func defaultRules() *clientcmd.ClientConfigLoadingRules {
	return clientcmd.NewDefaultClientConfigLoadingRules()
}

// LoadKubeconfig reads kubectl's kubeconfig (path, else $KUBECONFIG or
// ~/.kube/config, merged as kubectl merges them).
func LoadKubeconfig(path string) (*clientcmdapi.Config, error) {
	rules := defaultRules()
	rules.ExplicitPath = path
	raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).RawConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	return &raw, nil
}

// DefaultKubeconfig is the kubeconfig kubectl reads without flags
// ($KUBECONFIG, else ~/.kube/config): session.Process.Kubeconfig.
func DefaultKubeconfig() (*clientcmdapi.Config, error) { return LoadKubeconfig("") }
