package credential

import (
	"context"
	"fmt"

	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/settings"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/tokencache"
)

// LogoutOptions is the logout command.
type LogoutOptions struct {
	Auth *settings.AuthOptions
	All  bool
	genericiooptions.IOStreams
	global *cmdutil.GlobalOptions
}

// NewCmdLogout builds logout.
func NewCmdLogout(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &LogoutOptions{Auth: settings.NewAuthOptions(), IOStreams: streams, global: g}
	cmd := &cobra.Command{
		Use:   "logout",
		Short: "Delete cached tokens: those of the identity the flags select, or --all",
		Long: `logout removes cached tokens from the keyring and the disk cache: the entry
of the identity selected by get-token's flags (or --profile), or with --all
every entry this plugin wrote. It does not revoke the tokens at the provider:
a refresh token that leaked stays valid until the provider expires it.`,
		Example: `  # Forget one identity (the same flags as get-token)
  kubectl impersonate logout --profile=tenant-a

  # Forget every token kubectl-impersonate cached, in the keyring and on disk
  kubectl impersonate logout --all`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(o),
	}
	o.Auth.AddFlags(cmd.Flags())
	cmd.SetUsageFunc(cmdutil.GroupedUsage)
	cmd.Flags().BoolVar(&o.All, "all", false, "Delete every cached token of kubectl-impersonate")
	return cmd
}

// Complete fills the settings.
func (o *LogoutOptions) Complete(args []string) error {
	return o.Auth.Complete(o.global.Getenv, cmdutil.Notifier(o.ErrOut))
}

// Validate checks the settings; --all needs none.
func (o *LogoutOptions) Validate() error {
	if o.All {
		return nil
	}
	return o.Auth.Validate()
}

// Run deletes from the keyring and the disk whatever the storage setting,
// so that a token cached during a keyring outage goes too.
func (o *LogoutOptions) Run(ctx context.Context) error {
	store := &tokencache.Auto{Keyring: tokencache.NewKeyring(), Disk: tokencache.NewDisk(o.Auth.TokenCacheDir), Notify: func(string) {}}
	if o.All {
		if err := store.DeleteAll(ctx); err != nil {
			return fmt.Errorf("deleting cached tokens: %w", err)
		}
		fmt.Fprintln(o.Out, "Deleted every cached token of kubectl-impersonate.")
		return nil
	}
	if err := store.Delete(ctx, o.Auth.Key().ID()); err != nil {
		return fmt.Errorf("deleting the cached token: %w", err)
	}
	fmt.Fprintf(o.Out, "Deleted the cached token of client %q at %s.\n", o.Auth.ClientID, o.Auth.IssuerURL)
	return nil
}
