package credential

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/kubeapi"
	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/session"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/settings"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
)

// StatusOptions is the status command: one row per kubeconfig context
// whose user runs this plugin, from the token cache alone; --check asks
// each cluster who the cached token is.
type StatusOptions struct {
	Kubeconfig string
	Contexts   []string
	Check      bool
	Parallel   int
	Timeout    time.Duration
	Output     *cmdutil.OutputFlags
	genericiooptions.IOStreams
	global *cmdutil.GlobalOptions

	raw *clientcmdapi.Config
	// checker asks a context's cluster who the token is, store opens a
	// session's cache (fakes in tests).
	checker func(ctx context.Context, s *session.Session) (*session.Check, error)
	store   func(a *settings.AuthOptions) (tokencache.Store, error)
	now     func() time.Time
}

// NewCmdStatus builds status.
func NewCmdStatus(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmdStatus(&StatusOptions{IOStreams: streams, global: g, Parallel: 8, Timeout: 5 * time.Second})
}

func newCmdStatus(o *StatusOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "status [CONTEXT...]",
		Aliases: []string{"sessions"},
		Short:   "Show, for each kubeconfig context that uses this plugin, who is logged in and until when",
		Long: `status lists the kubeconfig contexts whose user runs kubectl-impersonate
(all of them, or the CONTEXTs named): the identity the cached token names,
the issuer and client, when the token expires, whether a refresh token is
cached, where (keyring or disk), and whether --allowed-server lets the token
go to that context's cluster. Contexts that share one cached token say so.
It reads the token cache only: no network, no login, no token printed.

--check also asks each cluster who the cached token is (SelfSubjectReview),
--parallel clusters at a time, each within --timeout; a token that is not
cached, has expired, or that --allowed-server keeps from a cluster is not
sent.`,
		Example: `  kubectl impersonate status
  kubectl impersonate status prod staging -o yaml
  # Ask each cluster too
  kubectl impersonate status --check`,
		RunE:              o.global.RunE(o),
		ValidArgsFunction: cmdutil.CompleteContexts,
	}
	cmd.Flags().StringVar(&o.Kubeconfig, "kubeconfig", "", "Path to the kubeconfig file")
	cmd.Flags().BoolVar(&o.Check, "check", false, "Ask each cluster who the cached token is (SelfSubjectReview)")
	cmd.Flags().IntVar(&o.Parallel, "parallel", o.Parallel, "With --check: how many clusters to ask at once")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", o.Timeout, "With --check: how long to wait for each cluster")
	o.Output = cmdutil.NewOutputFlags(cmd.Flags(), "a table")
	return cmd
}

// Complete reads the kubeconfig.
func (o *StatusOptions) Complete(ctx context.Context, args []string) error {
	o.Contexts = args
	raw, err := cmdutil.LoadKubeconfig(o.Kubeconfig)
	if err != nil {
		return err
	}
	o.raw = raw
	if o.checker == nil {
		o.checker = o.selfSubjectReview
	}
	if o.store == nil {
		o.store = func(a *settings.AuthOptions) (tokencache.Store, error) { return a.NewStore(session.Quiet) }
	}
	if o.now == nil {
		o.now = time.Now
	}
	return nil
}

// Validate checks the flags.
func (o *StatusOptions) Validate() error {
	if o.Parallel < 1 {
		return fmt.Errorf("--parallel must be at least 1, got %d", o.Parallel)
	}
	if o.Timeout <= 0 {
		return fmt.Errorf("--timeout must be positive, got %s", o.Timeout)
	}
	return o.Output.Validate()
}

// Run prints the rows: the kubeconfig's sessions, what the cache (and
// with --check, each cluster) says of them.
func (o *StatusOptions) Run(ctx context.Context) error {
	sessions, err := session.List(o.raw, o.Contexts, nil, o.global.Getenv)
	if err != nil {
		return err
	}
	opts := session.StatusOptions{Current: o.raw.CurrentContext, Store: o.store, Parallel: o.Parallel,
		Timeout: o.Timeout}
	if o.Check {
		opts.Checker = o.checker
	}
	rows := session.Statuses(ctx, sessions, opts)
	return o.Output.Print(o.Out, map[string]any{"sessions": rows}, func(w io.Writer) { o.printTable(w, rows) })
}

// selfSubjectReview asks the context's cluster who its cached token is,
// with the kubeconfig's TLS and proxy settings and the token instead of
// the exec entry, read through the one gate (session.Gate).
func (o *StatusOptions) selfSubjectReview(ctx context.Context, s *session.Session) (*session.Check, error) {
	cfg, err := clientcmd.NewNonInteractiveClientConfig(*o.raw, s.Context, &clientcmd.ConfigOverrides{},
		nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("context %s: %w", s.Context, err)
	}
	store, err := o.store(s.Auth)
	if err != nil {
		return nil, err
	}
	cfg, _, err = s.Gate(ctx, cfg, store)
	if err != nil {
		return nil, err
	}
	cfg.Impersonate = rest.ImpersonationConfig{}
	cfg.Timeout = o.Timeout
	cfg.UserAgent = cmdutil.UserAgent()
	c, err := kubeapi.NewClient(cfg)
	if err != nil {
		return nil, err
	}
	u, _, err := c.WhoAmI(ctx)
	if err != nil {
		return nil, err
	}
	return &session.Check{Username: u.Username, Groups: u.Groups}, nil
}

// printTable prints one line per context.
func (o *StatusOptions) printTable(w io.Writer, rows []*session.Status) {
	if len(rows) == 0 {
		fmt.Fprintln(o.ErrOut, "No kubeconfig context uses kubectl-impersonate (kubectl impersonate setup writes one).")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := "CURRENT\tCONTEXT\tIDENTITY\tISSUER\tEXPIRES\tREFRESH\tSTORAGE\tSERVER"
	if o.Check {
		header += "\tCLUSTER SAYS"
	}
	fmt.Fprintln(tw, header)
	now := o.now()
	for _, r := range rows {
		cur := ""
		if r.Current {
			cur = "*"
		}
		identity := cmp.Or(logging.Printable(r.Identity), "-")
		if len(r.SharedWith) > 0 {
			identity += fmt.Sprintf(" (shared with %s)",
				strings.ReplaceAll(logging.PrintableList(r.SharedWith), ", ", ","))
		}
		expires := "not logged in"
		switch {
		case r.Error != "":
			expires = "error: " + logging.Printable(r.Error)
		case r.LoggedIn && r.Expiry.IsZero():
			expires = "exchange not cached"
		case r.Valid:
			expires = "in " + shortDuration(r.Expiry.Sub(now))
		case r.LoggedIn:
			expires = "expired " + shortDuration(now.Sub(r.Expiry)) + " ago"
		}
		refresh := "no"
		if r.RefreshToken {
			refresh = "yes"
		}
		server := r.AllowedServer
		if r.Refused() {
			server = "refused"
		}
		line := strings.Join([]string{cur, logging.Printable(r.Context), identity,
			cmp.Or(logging.Printable(r.Issuer), "-"), expires, refresh, cmp.Or(r.Storage, "-"), server}, "\t")
		if o.Check {
			says := "-"
			switch {
			case r.Check == nil:
			case r.Check.Error != "":
				says = "error: " + logging.Printable(r.Check.Error)
			default:
				says = logging.Printable(r.Check.Username)
			}
			line += "\t" + says
		}
		fmt.Fprintln(tw, line)
	}
	_ = tw.Flush()
	for _, r := range rows {
		if r.Refused() {
			fmt.Fprintf(o.ErrOut, "%s: %s\n", logging.Printable(r.Context), logging.Printable(r.AllowedServer))
		}
	}
}

// shortDuration is d rounded for a table: 42s, 17m, 3h5m, 2d4h.
func shortDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}
