package sudo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation"
	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
)

// RequestOptions is sudo request.
type RequestOptions struct {
	base
	Role, Reason, Ticket string
	For                  time.Duration
}

func newCmdRequest(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &RequestOptions{base: base{IOStreams: streams}}
	cmd := &cobra.Command{
		Use:   "request --role ROLE --for DURATION --reason TEXT",
		Short: "Ask for a role in a namespace for a while; someone else approves",
		Long: `request makes a SudoRequest for you in the namespace: the role, how long, why
and a ticket. The cluster's admission refuses a role or a duration the
namespace's SudoPolicy does not allow, and a namespace without one. The request
waits for an approver (kubectl impersonate sudo list shows it to them).`,
		Example: `  kubectl impersonate sudo request -n payments --role edit --for 30m --reason "INC-123: payments down" --ticket INC-123`,
		Args:    cobra.NoArgs,
		RunE:    g.RunE(o),
	}
	o.bind(cmd, g)
	f := cmd.Flags()
	f.StringVar(&o.Role, "role", "", "The Role or ClusterRole to hold, as the namespace's SudoPolicy names it")
	f.DurationVar(&o.For, "for", 0, "How long, in whole seconds from 1m (at most what the SudoPolicy allows)")
	f.StringVar(&o.Reason, "reason", "", "Why, for the approver and the audit log")
	f.StringVar(&o.Ticket, "ticket", "", "A ticket or incident ID, for the audit log")
	return cmd
}

// Complete builds the client; the reason and the ticket lose the spaces at
// their ends (the cluster admits none there).
func (o *RequestOptions) Complete(context.Context, []string) error {
	o.Reason, o.Ticket = strings.TrimSpace(o.Reason), strings.TrimSpace(o.Ticket)
	return o.complete()
}

// Validate checks the flags before anything is sent.
func (o *RequestOptions) Validate() error {
	switch {
	case o.Role == "":
		return errors.New("--role is required: the role to hold, as the namespace's SudoPolicy names it")
	case o.Reason == "":
		return errors.New("--reason is required: the approver and the audit log read it")
	case o.Reason != elevation.CleanText(o.Reason) || o.Ticket != elevation.CleanText(o.Ticket):
		return errors.New("--reason and --ticket are one line each, without control characters: the audit log " +
			"keeps them as headers")
	case o.For < time.Minute || o.For%time.Second != 0:
		return fmt.Errorf("--for must be whole seconds, at least 1m (got %s)", o.For)
	}
	return nil
}

// Run makes the request.
func (o *RequestOptions) Run(ctx context.Context) error {
	r, err := elevation.Ask(ctx, o.client, o.namespace, elevation.RequestSpec{Role: o.Role,
		DurationSeconds: int64(o.For / time.Second), Reason: o.Reason, Ticket: o.Ticket})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "sudorequest/%s created in %s: %s for %s\n", logging.Printable(r.Name),
		logging.Printable(r.Namespace), logging.Printable(r.Spec.Role), o.For)
	fmt.Fprintf(o.ErrOut, "Ask an approver to run: kubectl impersonate sudo approve %s -n %s\n",
		logging.Printable(r.Name), logging.Printable(r.Namespace))
	return nil
}
