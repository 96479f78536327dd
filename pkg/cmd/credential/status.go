package credential

import (
	"cmp"
	"context"
	"fmt"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credspec"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/kubeapi"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/logging"
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
	// checker asks a context's cluster who the token is (a fake in tests).
	checker func(ctx context.Context, s *contextSession, token string) (*SessionCheck, error)
	now     func() time.Time
}

// SessionStatus is one row of status.
type SessionStatus struct {
	Context string `json:"context"`
	Current bool   `json:"current,omitempty"`
	Cluster string `json:"cluster"`
	Server  string `json:"server,omitempty"`
	// User is the kubeconfig user; Identity whom the cached token names.
	User     string `json:"user"`
	Identity string `json:"identity,omitempty"`
	Issuer   string `json:"issuer,omitempty"`
	ClientID string `json:"clientID,omitempty"`
	Exchange string `json:"exchange,omitempty"`
	// LoggedIn: a token is cached; Valid: it has not expired.
	LoggedIn     bool      `json:"loggedIn"`
	Valid        bool      `json:"valid"`
	Expiry       time.Time `json:"expiry,omitzero"`
	RefreshToken bool      `json:"refreshToken"`
	// Storage is where the token is cached (keyring, disk).
	Storage string `json:"storage,omitempty"`
	// AllowedServer is the --allowed-server check of this cluster:
	// "any" (no limit), "allowed", or why the token is refused.
	AllowedServer string `json:"allowedServer"`
	// SharedWith are the other contexts using the same cached token.
	SharedWith []string      `json:"sharedWith,omitempty"`
	Error      string        `json:"error,omitempty"`
	Check      *SessionCheck `json:"check,omitempty"`
}

// SessionCheck is the cluster's SelfSubjectReview of the cached token.
type SessionCheck struct {
	Username string   `json:"username,omitempty"`
	Groups   []string `json:"groups,omitempty"`
	Error    string   `json:"error,omitempty"`
}

// NewCmdStatus builds status.
func NewCmdStatus(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &StatusOptions{IOStreams: streams, global: g, Parallel: 8, Timeout: 5 * time.Second}
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
		RunE: cmdutil.RunE(o),
	}
	cmd.Flags().StringVar(&o.Kubeconfig, "kubeconfig", "", "Path to the kubeconfig file")
	cmd.Flags().BoolVar(&o.Check, "check", false, "Ask each cluster who the cached token is (SelfSubjectReview)")
	cmd.Flags().IntVar(&o.Parallel, "parallel", o.Parallel, "With --check: how many clusters to ask at once")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", o.Timeout, "With --check: how long to wait for each cluster")
	o.Output = cmdutil.NewOutputFlags(cmd.Flags(), "a table")
	return cmd
}

// Complete reads the kubeconfig.
func (o *StatusOptions) Complete(args []string) error {
	o.Contexts = args
	raw, err := loadKubeconfig(o.Kubeconfig)
	if err != nil {
		return err
	}
	o.raw = raw
	if o.checker == nil {
		o.checker = o.selfSubjectReview
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

// Run prints the rows.
func (o *StatusOptions) Run(ctx context.Context) error {
	sessions, err := sessionsOf(o.raw, o.Contexts, nil, o.global.Getenv)
	if err != nil {
		return err
	}
	rows := make([]*SessionStatus, len(sessions))
	tokens := make([]string, len(sessions))
	o.each(len(sessions), func(i int) { rows[i], tokens[i] = o.status(ctx, sessions[i]) })
	byIdentity := map[string][]string{}
	for _, s := range sessions {
		if id := s.identity(); id != "" {
			byIdentity[id] = append(byIdentity[id], s.Context)
		}
	}
	for i, s := range sessions {
		for _, other := range byIdentity[s.identity()] {
			if other != s.Context {
				rows[i].SharedWith = append(rows[i].SharedWith, other)
			}
		}
	}
	if o.Check {
		o.each(len(sessions), func(i int) {
			if tokens[i] == "" || rows[i].AllowedServer != "any" && rows[i].AllowedServer != "allowed" {
				return
			}
			cctx, cancel := context.WithTimeout(ctx, o.Timeout)
			defer cancel()
			c, err := o.checker(cctx, sessions[i], tokens[i])
			if err != nil {
				c = &SessionCheck{Error: logging.OneLine(err.Error(), 300)}
			}
			rows[i].Check = c
		})
	}
	return o.Output.Print(o.Out, map[string]any{"sessions": rows}, func(w io.Writer) { o.printTable(w, rows) })
}

// each runs f(0..n-1), o.Parallel at a time.
func (o *StatusOptions) each(n int, f func(i int)) {
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			f(i)
		})
	}
	wg.Wait()
}

// status is one context's row from the cache, and the token a check may
// send (when valid and allowed to go to the cluster).
func (o *StatusOptions) status(ctx context.Context, s *contextSession) (*SessionStatus, string) {
	r := &SessionStatus{Context: s.Context, Current: s.Context == o.raw.CurrentContext, Cluster: s.Cluster, User: s.User, AllowedServer: "any"}
	if s.cluster != nil {
		r.Server = s.cluster.Server
	}
	if s.err != nil {
		r.Error = logging.OneLine(s.err.Error(), 300)
		return r, ""
	}
	a := s.auth
	r.Issuer, r.ClientID, r.Exchange = a.IssuerURL, a.ClientID, a.Exchange
	if a.Exchange == credspec.ExchangeCloudSigma {
		r.Issuer = a.CloudSigma().Issuer()
	}
	if len(a.AllowedServers) > 0 {
		r.AllowedServer = "allowed"
		if err := a.CheckAllowedServer(s.execCluster()); err != nil {
			r.AllowedServer = logging.OneLine(err.Error(), 300)
		}
	}
	store, err := a.NewStore(func(string) {})
	if err != nil {
		r.Error = err.Error()
		return r, ""
	}
	e, where, err := cachedEntry(ctx, store, a.Key().ID())
	if err != nil {
		r.Error = logging.OneLine(err.Error(), 300)
		return r, ""
	}
	if e == nil && a.Exchange == credspec.ExchangeTokenExchange {
		// The exchanged token is not cached; the login's may be.
		if base, bwhere, berr := cachedEntry(ctx, store, a.BaseKey().ID()); berr == nil && base != nil {
			r.LoggedIn, r.RefreshToken, r.Storage = true, base.RefreshToken != "", bwhere
			r.Identity = tokenSubject(base.IDToken)
		}
		return r, ""
	}
	if e == nil {
		return r, ""
	}
	tok, exp := entryToken(e, a)
	r.LoggedIn, r.Storage, r.RefreshToken, r.Expiry = true, where, e.RefreshToken != "", exp
	r.Identity = cmp.Or(tokenSubject(tok), tokenSubject(e.IDToken))
	r.Valid = tok != "" && o.now().Before(exp)
	if !r.Valid {
		return r, ""
	}
	return r, tok
}

// selfSubjectReview asks the context's cluster, with the kubeconfig's TLS
// and proxy settings and the cached token instead of the exec entry, who
// the token is.
func (o *StatusOptions) selfSubjectReview(ctx context.Context, s *contextSession, token string) (*SessionCheck, error) {
	cfg, err := clientcmd.NewNonInteractiveClientConfig(*o.raw, s.Context, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("context %s: %w", s.Context, err)
	}
	cfg.ExecProvider, cfg.AuthProvider = nil, nil
	cfg.BearerToken, cfg.BearerTokenFile = token, ""
	cfg.Username, cfg.Password = "", ""
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
	return &SessionCheck{Username: u.Username, Groups: u.Groups}, nil
}

// printTable prints one line per context.
func (o *StatusOptions) printTable(w io.Writer, rows []*SessionStatus) {
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
			identity += fmt.Sprintf(" (shared with %s)", strings.ReplaceAll(printableList(r.SharedWith), ", ", ","))
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
		if server != "any" && server != "allowed" {
			server = "refused"
		}
		line := strings.Join([]string{cur, logging.Printable(r.Context), identity, cmp.Or(logging.Printable(r.Issuer), "-"), expires, refresh, cmp.Or(r.Storage, "-"), server}, "\t")
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
		if r.AllowedServer != "any" && r.AllowedServer != "allowed" {
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
