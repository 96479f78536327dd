package sudo

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation"
	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
)

// GrantStatus is one grant as status prints it with -o json|yaml.
type GrantStatus struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Requester string    `json:"requester"`
	Role      string    `json:"role"`
	Approver  string    `json:"approver"`
	Reason    string    `json:"reason"`
	Ticket    string    `json:"ticket,omitempty"`
	Ends      time.Time `json:"ends"`
	// Active: the grant counts now (elevation.Check); else Why not.
	Active bool   `json:"active"`
	Why    string `json:"why,omitempty"`
}

// listing is a subcommand that lists: the namespace or -A, and -o.
type listing struct {
	base
	Output        *cmdutil.OutputFlags
	AllNamespaces bool
}

func (o *listing) bindList(cmd *cobra.Command, g *cmdutil.GlobalOptions) {
	o.bind(cmd, g)
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "Every namespace")
	o.Output = cmdutil.NewOutputFlags(cmd.Flags(), "a table")
}

// ValidateFlags checks -o before anything is read.
func (o *listing) ValidateFlags() error { return o.Output.Validate() }

// Complete builds the client.
func (o *listing) Complete(context.Context, []string) error { return o.complete() }

// scope is the namespace listed, "" for every one.
func (o *listing) scope() string {
	if o.AllNamespaces {
		return ""
	}
	return o.namespace
}

// StatusOptions is sudo status.
type StatusOptions struct {
	listing
	now func() time.Time
}

func newCmdStatus(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &StatusOptions{listing: listing{base: base{IOStreams: streams}}, now: time.Now}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Your grants in the namespace (-A: every namespace) and the time each has left",
		Long: `status lists the SudoGrants made for you: role, approver, reason, when each
ends (its creation time on kube-apiserver's clock plus its duration) and the
time left by this machine's clock.`,
		Example: `  kubectl impersonate sudo status -n payments
  kubectl impersonate sudo status -A -o json`,
		Args: cobra.NoArgs,
		RunE: g.RunE(o),
	}
	o.bindList(cmd, g)
	return cmd
}

// Run lists the caller's grants.
func (o *StatusOptions) Run(ctx context.Context) error {
	ns := o.scope()
	me, _, err := o.client.WhoAmI(ctx)
	if err != nil {
		return fmt.Errorf("asking who you are: %w", err)
	}
	grants, err := elevation.Grants(ctx, o.client, ns)
	if err != nil {
		return err
	}
	reqs, err := elevation.Requests(ctx, o.client, ns)
	if err != nil {
		return err
	}
	now := o.now()
	out := []GrantStatus{}
	for _, g := range grants {
		if g.Spec.Requester != me.Username {
			continue
		}
		active, why := elevation.Check(g, elevation.RequestOf(g, reqs), now)
		out = append(out, GrantStatus{Namespace: g.Namespace, Name: g.Name, Requester: g.Spec.Requester,
			Role: g.Spec.Role, Approver: g.Spec.Approver, Reason: g.Spec.Reason, Ticket: g.Spec.Ticket,
			Ends: g.Ends().UTC(), Active: active, Why: why})
	}
	return o.Output.Print(o.Out, out, func(w io.Writer) {
		if len(out) == 0 {
			fmt.Fprintln(o.ErrOut, "No grants for "+logging.Printable(me.Username)+".")
			return
		}
		var rows [][]string
		for _, s := range out {
			left := until(s.Ends, now)
			if !s.Active {
				left = "none: " + s.Why
			}
			rows = append(rows, []string{s.Namespace, s.Name, s.Role, s.Approver, s.Ends.Format(time.RFC3339), left,
				s.Reason})
		}
		table(w, "NAMESPACE\tGRANT\tROLE\tAPPROVER\tENDS\tLEFT\tREASON", rows)
	})
}

// ListOptions is sudo list.
type ListOptions struct{ listing }

// PendingRequest is a request awaiting approval, as list prints it.
type PendingRequest struct {
	Namespace       string    `json:"namespace"`
	Name            string    `json:"name"`
	Requester       string    `json:"requester"`
	Role            string    `json:"role"`
	DurationSeconds int64     `json:"durationSeconds"`
	Reason          string    `json:"reason"`
	Ticket          string    `json:"ticket,omitempty"`
	Created         time.Time `json:"created"`
}

func newCmdList(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ListOptions{listing{base: base{IOStreams: streams}}}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Requests awaiting approval in the namespace (-A: every namespace), for approvers",
		Long: `list shows the SudoRequests no grant approves yet, oldest first: who asks,
for which role, how long and why.`,
		Example: `  kubectl impersonate sudo list -n payments`,
		Args:    cobra.NoArgs,
		RunE:    g.RunE(o),
	}
	o.bindList(cmd, g)
	return cmd
}

// Run lists the requests no grant approves.
func (o *ListOptions) Run(ctx context.Context) error {
	ns := o.scope()
	reqs, err := elevation.Requests(ctx, o.client, ns)
	if err != nil {
		return err
	}
	out := []PendingRequest{}
	for _, r := range elevation.Pending(reqs) {
		out = append(out, PendingRequest{Namespace: r.Namespace, Name: r.Name, Requester: r.Spec.Requester,
			Role: r.Spec.Role, DurationSeconds: r.Spec.DurationSeconds, Reason: r.Spec.Reason, Ticket: r.Spec.Ticket,
			Created: r.CreationTimestamp.UTC()})
	}
	return o.Output.Print(o.Out, out, func(w io.Writer) {
		if len(out) == 0 {
			fmt.Fprintln(o.ErrOut, "No requests awaiting approval.")
			return
		}
		var rows [][]string
		for _, p := range out {
			rows = append(rows, []string{p.Namespace, p.Name, p.Requester, p.Role,
				(time.Duration(p.DurationSeconds) * time.Second).String(), p.Reason, p.Ticket})
		}
		table(w, "NAMESPACE\tREQUEST\tREQUESTER\tROLE\tFOR\tREASON\tTICKET", rows)
	})
}
