package sudo

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation"
	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
)

// named is a subcommand of one object, named by its argument.
type named struct {
	base
	name string
}

// Complete takes the name and builds the client.
func (o *named) Complete(_ context.Context, args []string) error {
	o.name = args[0]
	return o.complete()
}

// ApproveOptions is sudo approve.
type ApproveOptions struct{ named }

func newCmdApprove(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ApproveOptions{named{base: base{IOStreams: streams}}}
	cmd := &cobra.Command{
		Use:   "approve REQUEST",
		Short: "Approve someone else's request: its grant starts now",
		Long: `approve signs your approval on the request's status, then makes its SudoGrant,
copied from the request as the cluster holds it. The grant starts at its
creation time, as kube-apiserver sets it, and ends that much later. The
cluster's admission refuses your own request, an approver without the verb
approve on it, and a request already approved.`,
		Example: `  kubectl impersonate sudo approve sudo-x7k2p -n payments`,
		Args:    cobra.ExactArgs(1),
		RunE:    g.RunE(o),
	}
	o.bind(cmd, g)
	return cmd
}

// Run makes the grant.
func (o *ApproveOptions) Run(ctx context.Context) error {
	g, err := elevation.Approve(ctx, o.client, o.namespace, o.name)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "sudogrant/%s created in %s: %s holds %s until %s\n", logging.Printable(g.Name),
		logging.Printable(g.Namespace), logging.Printable(g.Spec.Requester), logging.Printable(g.Spec.Role),
		g.Ends().UTC().Format(time.RFC3339))
	return nil
}

// DenyOptions is sudo deny.
type DenyOptions struct{ named }

func newCmdDeny(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &DenyOptions{named{base: base{IOStreams: streams}}}
	cmd := &cobra.Command{
		Use:   "deny REQUEST",
		Short: "Deny a request (or withdraw your own): it will not be approved",
		Long: `deny signs a denial on the request's status: it can no longer be approved. An
approver (the verb approve on the request) denies; the requester may deny their
own request to withdraw it. The cluster's admission refuses a request already
approved or denied.`,
		Example: `  kubectl impersonate sudo deny sudo-x7k2p -n payments`,
		Args:    cobra.ExactArgs(1),
		RunE:    g.RunE(o),
	}
	o.bind(cmd, g)
	return cmd
}

// Run signs the denial.
func (o *DenyOptions) Run(ctx context.Context) error {
	if err := elevation.Deny(ctx, o.client, o.namespace, o.name); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "sudorequest/%s denied in %s\n", logging.Printable(o.name), logging.Printable(o.namespace))
	return nil
}

// RevokeOptions is sudo revoke.
type RevokeOptions struct{ named }

func newCmdRevoke(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &RevokeOptions{named{base: base{IOStreams: streams}}}
	cmd := &cobra.Command{
		Use:   "revoke GRANT",
		Short: "End a grant now: sign its revocation",
		Long: `revoke signs a SudoGrant's revocation on its status: the elevation it gave ends
now. Approvers revoke (deploy/sudo/rbac.yaml); a grant is not deleted, so its
request cannot be approved again.`,
		Example: `  kubectl impersonate sudo revoke sudo-x7k2p -n payments`,
		Args:    cobra.ExactArgs(1),
		RunE:    g.RunE(o),
	}
	o.bind(cmd, g)
	return cmd
}

// Run signs the revocation.
func (o *RevokeOptions) Run(ctx context.Context) error {
	if err := elevation.Revoke(ctx, o.client, o.namespace, o.name); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "sudogrant/%s revoked in %s\n", logging.Printable(o.name), logging.Printable(o.namespace))
	return nil
}
