package credential

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/session"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/settings"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/credspec"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
)

// LogoutOptions is the logout command.
type LogoutOptions struct {
	Auth *settings.AuthOptions
	All  bool
	// Contexts select kubeconfig contexts whose users' identities are
	// logged out (default: the current one, unless the flags name a
	// provider).
	Contexts   []string
	Kubeconfig string
	NoRevoke   bool
	Output     *cmdutil.OutputFlags
	genericiooptions.IOStreams
	global *cmdutil.GlobalOptions

	// targets are the identities to log out, with their contexts.
	targets []*logoutTarget
	// others are the kubeconfig's other contexts, to report sharing.
	others []*session.Session
	// revoker revokes a token of an identity (a fake in tests).
	revoker session.Revoker
	// store is where tokens are deleted from (nil: keyring and disk).
	store tokencache.Store
}

// logoutTarget is one identity: its settings and the contexts using it.
type logoutTarget struct {
	auth     *settings.AuthOptions
	contexts []string
}

// LogoutResult is what logout did for one identity (-o json|yaml).
type LogoutResult struct {
	// Contexts are the contexts logged out; SharedWith the kubeconfig's
	// other contexts that used the same token (also logged out).
	Contexts   []string `json:"contexts,omitempty"`
	SharedWith []string `json:"sharedWith,omitempty"`
	Identity   string   `json:"identity,omitempty"`
	Issuer     string   `json:"issuer"`
	ClientID   string   `json:"clientID"`
	// Revocation is "revoked", "skipped" (--no-revoke), "not supported"
	// (no revocation endpoint), "nothing cached", or the failure.
	Revocation string `json:"revocation"`
	Deleted    bool   `json:"deleted"`
}

// NewCmdLogout builds logout.
func NewCmdLogout(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmdLogout(&LogoutOptions{Auth: settings.NewAuthOptions(), IOStreams: streams, global: g})
}

func newCmdLogout(o *LogoutOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "logout",
		Short: "Revoke and delete the cached tokens of a context's identity, of several, or --all",
		Long: `logout ends the session of the current kubeconfig context's identity, or of
each --context: it revokes the refresh token and the access token at the
provider (RFC 7009) when the provider advertises a revocation endpoint, then
deletes the cached tokens from the keyring and the disk cache. A revocation
that fails is reported (exit code 1), and the local copy is deleted anyway;
--no-revoke only deletes. Other contexts that share the identity's token are
named: they log in again on their next call.

As login, it reads the settings of the context's exec entry, and any of
get-token's flags given replaces the entry's value of it; flags that name a
provider (--oidc-issuer-url, --profile) without --context select the
identity alone. --all deletes every token kubectl-impersonate cached,
revoking first those of the kubeconfig's contexts.

Dex advertises no revocation endpoint: its refresh tokens stay valid until
they expire (or an administrator deletes the session).`,
		Example: `  # Log out of the current context's identity
  kubectl impersonate logout

  # Of two contexts, without asking the provider to revoke
  kubectl impersonate logout --context=prod --context=staging --no-revoke

  # Forget one identity by its settings (the same flags as get-token)
  kubectl impersonate logout --profile=tenant-a

  # Every token kubectl-impersonate cached, in the keyring and on disk
  kubectl impersonate logout --all`,
		Args: cobra.NoArgs,
		RunE: o.global.RunE(o),
	}
	o.Auth.AddFlags(cmd.Flags())
	cmd.SetUsageFunc(cmdutil.GroupedUsage)
	cmd.Flags().BoolVar(&o.All, "all", false, "Delete every cached token of kubectl-impersonate (revoking those of "+
		"the kubeconfig's contexts)")
	cmd.Flags().StringArrayVar(&o.Contexts, "context", nil, "Log out of this kubeconfig context's identity "+
		"(repeatable; default: the current context)")
	cmd.Flags().StringVar(&o.Kubeconfig, "kubeconfig", "", "The kubeconfig whose contexts are named")
	cmd.Flags().BoolVar(&o.NoRevoke, "no-revoke", false, "Only delete the local copies; do not ask the provider to "+
		"revoke the tokens")
	o.Output = cmdutil.NewOutputFlags(cmd.Flags(), "text")
	return cmd
}

// Complete finds the identities to log out: the settings the flags
// name, or the sessions of the contexts named (default: the current one),
// or with --all every session of the kubeconfig.
func (o *LogoutOptions) Complete(ctx context.Context, args []string) error {
	if o.revoker == nil {
		o.revoker = func(ctx context.Context, a *settings.AuthOptions, token, hint string) error {
			return session.Revoke(ctx, a, o.global.SessionEnv(o.IOStreams, cmdutil.SessionMode{}), token, hint)
		}
	}
	getenv := o.global.Getenv
	if NamesProvider(o.Auth) && len(o.Contexts) == 0 && o.Kubeconfig == "" {
		if err := o.Auth.Complete(getenv, cmdutil.Notifier(o.ErrOut)); err != nil {
			return err
		}
		if !o.All {
			o.targets = []*logoutTarget{{auth: o.Auth}}
		}
		// Sharing is reported when the kubeconfig can be read.
		if raw, err := cmdutil.LoadKubeconfig(""); err == nil {
			o.others, _ = session.List(raw, nil, nil, getenv)
		}
		return nil
	}
	if o.All {
		// Where --all deletes: the cache flags, if any.
		if err := o.Auth.Complete(getenv, cmdutil.Notifier(o.ErrOut)); err != nil {
			return err
		}
	}
	raw, err := cmdutil.LoadKubeconfig(o.Kubeconfig)
	if err != nil && o.All {
		fmt.Fprintf(o.ErrOut, "%s: no token is revoked, every one is deleted\n", logging.OneLine(err.Error(), 300))
		return nil
	}
	if err != nil {
		return err
	}
	return o.completeContexts(raw)
}

// completeContexts finds the identities of the contexts to log out.
func (o *LogoutOptions) completeContexts(raw *clientcmdapi.Config) error {
	all, err := session.List(raw, nil, nil, o.global.Getenv)
	if err != nil {
		return err
	}
	o.others = all
	names := o.Contexts
	switch {
	case o.All:
		names = nil
		for _, s := range all {
			names = append(names, s.Context)
		}
	case len(names) == 0:
		if raw.CurrentContext == "" {
			return errors.New("the kubeconfig has no current context: give --context, or the issuer flags")
		}
		names = []string{raw.CurrentContext}
	}
	if len(names) == 0 {
		return nil
	}
	sessions, err := session.List(raw, names, o.Auth, o.global.Getenv)
	if err != nil {
		if errors.Is(err, session.ErrNotOurs) && !o.All {
			return fmt.Errorf("give --oidc-issuer-url and --oidc-client-id, or --profile: %w", err)
		}
		return err
	}
	byID := map[string]*logoutTarget{}
	for _, s := range sessions {
		if s.Err != nil {
			if o.All {
				logging.Noticef(o.ErrOut, "context %s: %s (its tokens are deleted without revocation)", s.Context,
					logging.OneLine(s.Err.Error(), 300))
				continue
			}
			return fmt.Errorf("context %s: %w", s.Context, s.Err)
		}
		id := s.Identity()
		if t, ok := byID[id]; ok {
			t.contexts = append(t.contexts, s.Context)
			continue
		}
		t := &logoutTarget{auth: s.Auth, contexts: []string{s.Context}}
		byID[id] = t
		o.targets = append(o.targets, t)
	}
	return nil
}

// Validate checks the settings and the output format.
func (o *LogoutOptions) Validate() error {
	if o.All && len(o.Contexts) > 0 {
		return errors.New("give --all or --context, not both")
	}
	valid := o.targets[:0]
	for _, t := range o.targets {
		err := t.auth.Validate()
		switch {
		case err == nil:
			valid = append(valid, t)
		case o.All:
			// --all deletes every entry anyway: one bad entry stops nothing.
			logging.Noticef(o.ErrOut, "context %s: %s (its tokens are deleted without revocation)",
				logging.PrintableList(t.contexts), logging.OneLine(err.Error(), 300))
		case len(t.contexts) > 0:
			return fmt.Errorf("context %s: %w", logging.PrintableList(t.contexts), err)
		default:
			return err
		}
	}
	o.targets = valid
	return o.Output.Validate()
}

// Run revokes (unless told not to) and deletes, identity by identity; the
// local copies go whatever the revocation's outcome.
func (o *LogoutOptions) Run(ctx context.Context) error {
	var results []*LogoutResult
	var failed []string
	for _, t := range o.targets {
		r, err := o.logout(ctx, t)
		if err != nil {
			return err
		}
		if strings.HasPrefix(r.Revocation, "failed") {
			name := r.Issuer
			if len(r.Contexts) > 0 {
				name = strings.Join(r.Contexts, ", ")
			}
			failed = append(failed, logging.Printable(name))
		}
		results = append(results, r)
	}
	if o.All {
		if err := o.deleteStore(o.Auth.TokenCacheDir).DeleteAll(ctx); err != nil {
			return fmt.Errorf("deleting cached tokens: %w", err)
		}
	}
	if err := o.Output.Print(o.Out, map[string]any{"logouts": results, "all": o.All},
		func(w io.Writer) { o.print(w, results) }); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("the provider did not revoke the tokens of %s (the local copies are deleted): revoke the "+
			"session at the provider", strings.Join(failed, "; "))
	}
	return nil
}

// deleteStore is where tokens cached in dir are deleted from: the
// keyring and the disk, whatever the storage setting, so that a token
// cached during a keyring outage goes too (a test's store when set).
func (o *LogoutOptions) deleteStore(dir string) tokencache.Store {
	if o.store != nil {
		return o.store
	}
	return &tokencache.Auto{Keyring: tokencache.NewKeyring(), Disk: tokencache.NewDisk(dir), Notify: func(string) {}}
}

// logout ends one identity's session (session.Logout) and says which
// other contexts shared it.
func (o *LogoutOptions) logout(ctx context.Context, t *logoutTarget) (*LogoutResult, error) {
	a := t.auth
	r := &LogoutResult{Contexts: t.contexts, Issuer: a.IssuerURL, ClientID: a.ClientID}
	if a.Exchange == credspec.ExchangeCloudSigma {
		r.Issuer = a.CloudSigma().Issuer()
	}
	id := a.Key().ID()
	for _, s := range o.others {
		if s.Identity() == id && !slices.Contains(t.contexts, s.Context) {
			r.SharedWith = append(r.SharedWith, s.Context)
		}
	}
	revoke := o.revoker
	if o.NoRevoke {
		revoke = nil
	}
	var err error
	r.Identity, r.Revocation, err = session.Logout(
		ctx, a, o.deleteStore(a.TokenCacheDir), revoke, cmdutil.Notifier(o.ErrOut))
	if err != nil {
		return nil, err
	}
	r.Deleted = true
	return r, nil
}

// print says what was done, one line per identity.
func (o *LogoutOptions) print(w io.Writer, results []*LogoutResult) {
	for _, r := range results {
		who := "the identity"
		if r.Identity != "" {
			who = logging.Printable(r.Identity)
		}
		where := fmt.Sprintf("client %q at %s", r.ClientID, logging.Printable(r.Issuer))
		if len(r.Contexts) > 0 {
			where = "context " + logging.PrintableList(r.Contexts) + " (" + where + ")"
		}
		var what string
		switch {
		case r.Revocation == "revoked":
			what = "tokens revoked at the provider and deleted"
		case r.Revocation == "skipped":
			what = "tokens deleted, not revoked (--no-revoke)"
		case r.Revocation == "not supported":
			what = "tokens deleted; the provider has no revocation endpoint, so its refresh token stays valid there " +
				"until it expires"
		case r.Revocation == "nothing cached":
			what = "no token was cached"
		default:
			what = "tokens deleted, but revoking them " + r.Revocation
		}
		fmt.Fprintf(w, "Logged %s out of %s: %s.\n", who, where, what)
		if len(r.SharedWith) > 0 {
			fmt.Fprintf(w, "  The same token served %s: they log in again on their next call.\n",
				logging.PrintableList(r.SharedWith))
		}
	}
	if o.All {
		fmt.Fprintln(w, "Deleted every cached token of kubectl-impersonate.")
	}
}
