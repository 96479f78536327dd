package identity

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/inspect"
	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/settings"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/jwtclaims"
)

// GroupsOptions is the groups command.
type GroupsOptions struct {
	Kube        *cmdutil.KubeFlags
	GroupsClaim string
	Output      *cmdutil.OutputFlags
	client      inspect.WhoAmIClient
	// token is the current user's cached token (local cache only).
	token func(ctx context.Context) (string, error)
	genericiooptions.IOStreams
	global *cmdutil.GlobalOptions
}

// GroupRow is one group in either list.
type GroupRow struct {
	Group      string `json:"group"`
	InToken    bool   `json:"inToken"`
	FromServer bool   `json:"fromServer"`
}

// NewCmdGroups builds groups.
func NewCmdGroups(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &GroupsOptions{IOStreams: streams, global: g}
	cmd := &cobra.Command{
		Use:   "groups",
		Short: "The groups in your token beside the groups the API server reports for you",
		Long: `groups reads the groups claim of your cached token (--oidc-groups-claim, default
"groups") and asks the API server (SelfSubjectReview) which groups it gives
you, and shows both side by side: a group in the token but not in the API
server's answer usually means a missing --oidc-groups-prefix or claim
mapping; "system:authenticated" is added by the API server itself.`,
		Example: `  kubectl impersonate groups --oidc-groups-claim=groups`,
		Args:    cobra.NoArgs,
		RunE:    g.RunE(o),
	}
	o.Kube = cmdutil.NewKubeFlags(cmd.Flags(), g.Env)
	o.Kube.RegisterCompletions(cmd)
	cmd.Flags().StringVar(&o.GroupsClaim, "oidc-groups-claim", "groups", "The token claim holding the groups, as "+
		"kube-apiserver's --oidc-groups-claim")
	settings.AliasFlag(cmd.Flags(), "groups-claim", "oidc-groups-claim", streams.ErrOut)
	o.Output = cmdutil.NewOutputFlags(cmd.Flags(), "a table")
	return cmd
}

// Complete builds the client and the token lookup.
func (o *GroupsOptions) Complete(ctx context.Context, args []string) error {
	var err error
	if o.client, err = o.Kube.APIClient(); err != nil {
		return err
	}
	o.token = func(ctx context.Context) (string, error) {
		raw, _, err := gatedToken(ctx, o.Kube, o.global.Getenv)
		return raw, err
	}
	return nil
}

// ValidateFlags checks -o, before anything is read.
func (o *GroupsOptions) ValidateFlags() error { return o.Output.Validate() }

// Run reads both lists.
func (o *GroupsOptions) Run(ctx context.Context) error {
	raw, err := o.token(ctx)
	if err != nil {
		return err
	}
	tok, err := jwtclaims.Decode(raw)
	if err != nil {
		return err
	}
	ui, _, err := o.client.WhoAmI(ctx)
	if err != nil {
		return err
	}
	rows := map[string]*GroupRow{}
	row := func(g string) *GroupRow {
		if rows[g] == nil {
			rows[g] = &GroupRow{Group: g}
		}
		return rows[g]
	}
	for _, g := range tok.Strings(o.GroupsClaim) {
		row(g).InToken = true
	}
	for _, g := range ui.Groups {
		row(g).FromServer = true
	}
	var out []GroupRow
	for _, r := range rows {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return o.Output.Print(o.Out, out, func(w io.Writer) {
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "GROUP\tIN TOKEN\tFROM API SERVER")
		yes := func(b bool) string { return map[bool]string{true: "yes", false: "-"}[b] }
		for _, r := range out {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", logging.Printable(r.Group), yes(r.InToken), yes(r.FromServer))
		}
		_ = tw.Flush()
		if !slices.ContainsFunc(out, func(r GroupRow) bool { return r.InToken }) {
			fmt.Fprintf(w, "\nThe token has no %q claim: request the scope that adds it (often \"groups\").\n",
				o.GroupsClaim)
		}
	})
}
