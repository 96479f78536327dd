package util

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbac"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/resource"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/risk"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/config"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/session"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/credspec"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
)

// Completion answers a shell's TAB through kubectl (kubectl_complete-
// impersonate runs "kubectl-impersonate __complete"). It never logs in,
// never opens a browser and never waits long: what the API server knows
// (namespaces) is asked with the context's cached token alone, or, for a
// user that runs another plugin, with that plugin non-interactive, all
// within CompletionTimeout; resources come from kubectl's discovery cache.
// Every candidate passes Candidates (a name that needs escaping is left
// out: it would inject candidates).

// CompletionTimeout bounds what one completion may wait for.
const CompletionTimeout = 3 * time.Second

// nothing is a completion that offers no candidate and no file.
func nothing() ([]string, cobra.ShellCompDirective) { return nil, cobra.ShellCompDirectiveNoFileComp }

// prefixed are the names that start with toComplete, sorted and safe.
func prefixed(names []string, toComplete string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, toComplete) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return Candidates(out)
}

// Values completes a flag or an argument from fixed values.
func Values(values ...string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return prefixed(values, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// RegisterValues completes cmd's flag name with values, when it has it.
func RegisterValues(cmd *cobra.Command, name string, values ...string) {
	if cmd.Flags().Lookup(name) != nil {
		_ = cmd.RegisterFlagCompletionFunc(name, Values(values...))
	}
}

// RegisterAuthCompletions completes get-token's settings on cmd (get-token,
// login, logout, setup): profile names from the profiles file, and the
// values of the flags that take one of a few.
func RegisterAuthCompletions(cmd *cobra.Command, getenv func(string) string) {
	if cmd.Flags().Lookup(credspec.FlagProfile) != nil {
		_ = cmd.RegisterFlagCompletionFunc(credspec.FlagProfile,
			func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
				path, err := config.DefaultPath(getenv)
				if err != nil {
					return nothing()
				}
				f, err := config.Load(path)
				if err != nil {
					return nothing()
				}
				return prefixed(f.Names(), toComplete), cobra.ShellCompDirectiveNoFileComp
			})
	}
	RegisterValues(cmd, credspec.FlagGrantType, credspec.GrantTypes...)
	RegisterValues(cmd, credspec.FlagStorage, tokencache.Storages...)
	RegisterValues(cmd, credspec.FlagExchange, credspec.ExchangeCloudSigma, credspec.ExchangeTokenExchange)
	RegisterValues(cmd, credspec.FlagPKCEMethod, credspec.PKCEAuto, credspec.PKCENo, credspec.PKCES256)
	RegisterValues(cmd, credspec.FlagClientAuthMethod, credspec.ClientAuthMethods...)
}

// completionConfig is the REST configuration a completion asks the API
// server with: the context's cached token when its user runs this plugin,
// through the one gate (GatedConfig: no login, no refresh, nothing sent
// where get-token would not send it; none cached, no candidates); the
// user's own static credentials otherwise. Completion runs no credential
// plugin (another program on TAB, with no deadline of its own): a user
// with another exec entry or auth provider gets no server candidates.
func (k *KubeFlags) completionConfig(ctx context.Context) (*rest.Config, error) {
	cfg, err := k.Config()
	if err != nil {
		return nil, err
	}
	s, err := k.Session(k.getenv)
	switch {
	case err == nil:
		if cfg, _, err = s.Gate(ctx, cfg, nil); err != nil {
			return nil, err
		}
	case errors.Is(err, session.ErrNotOurs):
		if cfg.ExecProvider != nil || cfg.AuthProvider != nil {
			return nil, errors.New("completion runs no credential plugin but this one")
		}
		// The files the user's credentials name, read bounded: TAB must
		// not wait on a FIFO a kubeconfig names.
		if cfg, err = session.InlineFiles(cfg); err != nil {
			return nil, err
		}
	default:
		return nil, err
	}
	cfg.Timeout = CompletionTimeout
	return cfg, nil
}

// completionClient is an API client for a completion (completionConfig).
func (k *KubeFlags) completionClient(ctx context.Context) (*rbac.Client, error) {
	cfg, err := k.completionConfig(ctx)
	if err != nil {
		return nil, err
	}
	return k.rbacClient(cfg)
}

// CompleteNamespaces completes a namespace from the API server, bounded.
func (k *KubeFlags) CompleteNamespaces(
	c *cobra.Command, _ []string, toComplete string,
) ([]string, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(c.Context(), CompletionTimeout)
	defer cancel()
	client, err := k.completionClient(ctx)
	if err != nil {
		return nothing()
	}
	ns, err := client.Namespaces(ctx)
	if err != nil {
		return nothing()
	}
	return prefixed(ns, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// CompleteResources completes a resource as kubectl names one (plural,
// resource.group, short name, kind; with a "/", the resource's
// subresources) from kubectl's discovery cache, asking the server only
// when the cache is cold (aggregated discovery: two requests).
func (k *KubeFlags) CompleteResources(
	c *cobra.Command, _ []string, toComplete string,
) ([]string, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(c.Context(), CompletionTimeout)
	defer cancel()
	client, err := k.completionClient(ctx)
	if err != nil {
		return nothing()
	}
	all, err := client.Discover(ctx, strings.Contains(toComplete, "/"))
	if err != nil && len(all) == 0 {
		return nothing()
	}
	return prefixed(resourceNames(all, toComplete), toComplete), cobra.ShellCompDirectiveNoFileComp
}

// resourceNames are the names a person may type for all's resources.
func resourceNames(all []resource.Resource, toComplete string) []string {
	var names []string
	for _, r := range all {
		name, sub, isSub := strings.Cut(r.Name, "/")
		if isSub {
			if strings.Contains(toComplete, "/") {
				names = append(names, name+"/"+sub)
			}
			continue
		}
		names = append(names, r.String())
		if r.Group != "" &&
			!slices.ContainsFunc(all, func(o resource.Resource) bool { return o.Group == "" && o.Name == r.Name }) {
			names = append(names, r.Name)
		}
		names = append(names, r.ShortNames...)
		if r.Kind != "" {
			names = append(names, r.Kind)
		}
	}
	return names
}

// Verbs are the verbs a completion offers: kubectl's, the escalation
// verbs and constrained impersonation's.
func Verbs() []string {
	out := []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "impersonate",
		"bind", "escalate", "use", "approve", "sign"}
	for _, mode := range risk.ImpersonationModes {
		out = append(out, "impersonate:"+mode)
		for _, v := range rbac.DefaultVerbs {
			out = append(out, risk.ImpersonateOnVerb(mode, v))
		}
	}
	return out
}

// CompleteVerbResource completes the VERB RESOURCE arguments of why and
// who-can.
func (k *KubeFlags) CompleteVerbResource(
	c *cobra.Command, args []string, toComplete string,
) ([]string, cobra.ShellCompDirective) {
	switch len(args) {
	case 0:
		return Values(Verbs()...)(c, args, toComplete)
	case 1:
		return k.CompleteResources(c, args, toComplete)
	}
	return nothing()
}

// RegisterCompletions completes, on cmd and its subcommands, the flags
// whose values are known by name: -o's formats (FormatsAnnotation), get-
// token's settings (RegisterAuthCompletions), --verb, --method, --context
// of the commands that take a kubeconfig of their own, and the enums of
// setup and proxy. The commands register what needs their own state
// (KubeFlags' contexts, namespaces and resources).
func RegisterCompletions(cmd *cobra.Command, getenv func(string) string) {
	if f := cmd.Flags().Lookup("output"); f != nil && f.Annotations[FormatsAnnotation] != nil {
		var formats []string
		for _, v := range f.Annotations[FormatsAnnotation] {
			formats = append(formats, strings.TrimSuffix(v, "TEMPLATE"))
		}
		_ = cmd.RegisterFlagCompletionFunc("output",
			func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
				d := cobra.ShellCompDirectiveNoFileComp
				if strings.HasPrefix(toComplete, "jsonpath=") {
					d |= cobra.ShellCompDirectiveNoSpace
				}
				return prefixed(formats, toComplete), d
			})
	}
	RegisterAuthCompletions(cmd, getenv)
	RegisterListCompletions(cmd, "verb", Values(Verbs()...))
	RegisterValues(cmd, "method", string(rbac.FromRules), string(rbac.FromAccessReview))
	RegisterValues(cmd, "exec-interactive-mode", "IfAvailable", "Never", "Always")
	RegisterValues(cmd, "caller-impersonation-mode", "auto", "constrained", "classic")
	if cmd.Flags().Lookup("context") != nil && cmd.Flags().Lookup("as") == nil {
		// login, logout, setup: --context names one of --kubeconfig's.
		_ = cmd.RegisterFlagCompletionFunc("context", CompleteContexts)
	}
	for _, c := range cmd.Commands() {
		RegisterCompletions(c, getenv)
	}
}

// CompleteContexts completes the contexts of the kubeconfig the command's
// --kubeconfig names (kubectl's files without it).
func CompleteContexts(c *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	path := ""
	if f := c.Flags().Lookup("kubeconfig"); f != nil {
		path = f.Value.String()
	}
	raw, err := LoadKubeconfig(path)
	if err != nil {
		return nothing()
	}
	return prefixed(keys(raw.Contexts), toComplete), cobra.ShellCompDirectiveNoFileComp
}

// RegisterListCompletions completes flags that take a list of values
// (--verb=get,li<TAB>): the values already typed are kept.
func RegisterListCompletions(cmd *cobra.Command, name string, complete cobra.CompletionFunc) {
	if cmd.Flags().Lookup(name) == nil {
		return
	}
	_ = cmd.RegisterFlagCompletionFunc(name,
		func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			done, last := "", toComplete
			if i := strings.LastIndex(toComplete, ","); i >= 0 {
				done, last = toComplete[:i+1], toComplete[i+1:]
			}
			names, directive := complete(c, args, last)
			for i := range names {
				names[i] = done + names[i]
			}
			return names, directive | cobra.ShellCompDirectiveNoSpace
		})
}

// Candidates are the names a completion may offer: only characters a
// Kubernetes name, a context, a profile or a flag value uses
// ([A-Za-z0-9._:/=,@+-], and "_" of GKE's context names, which no shell
// treats specially), at most 253 of them. Every completion script
// since kubectl 1.26 takes such a candidate as it is; cobra before 1.9
// (kubectl up to 1.33) puts candidates through bash's compgen -W, which
// expands "$(...)" and backticks, and any script splits on blanks and
// takes a tab for the start of a description. A name from a kubeconfig
// or an API server with anything else is left out.
func Candidates(names []string) []string {
	out := names[:0:0]
	for _, n := range names {
		if isCandidate(n) {
			out = append(out, n)
		}
	}
	return out
}

// isCandidate says n is a name Candidates keeps.
func isCandidate(n string) bool {
	if n == "" || len(n) > 253 || n[0] == '-' {
		return false // a leading "-" would be taken for a flag
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			strings.ContainsRune("._:/=,@+-_", r)) {
			return false
		}
	}
	return true
}
