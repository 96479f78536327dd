// Package sudo holds kubectl impersonate sudo: time-boxed, approved
// elevation's commands over its state in the cluster (pkg/cluster/elevation).
//
//   - request, approve, revoke: make and end grants, as the cluster's
//     admission allows (deploy/sudo/admission.yaml).
//   - status: your grants and their time left; list: requests awaiting
//     approval.
//
// Nothing here elevates a request yet: the proxy's enforcement is to come
// (docs/elevation.md).
package sudo

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation"
	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
)

// NewCmdSudo builds sudo and its subcommands.
func NewCmdSudo(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sudo",
		Short: "Time-boxed, approved elevation: request a role for a while, approve, revoke, see what is held",
		Long: `sudo manages time-boxed, approved elevation in a namespace: a person requests a
role for a while with a reason, someone else approves, and the grant ends at its
creation time (kube-apiserver's clock) plus its duration. The state lives in the
cluster (deploy/sudo: SudoPolicy, SudoRequest, SudoGrant), guarded by its
admission policies. The proxy's enforcement of grants is not built yet: a grant
does not elevate anything by itself (docs/elevation.md).`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newCmdRequest(g, streams), newCmdApprove(g, streams), newCmdRevoke(g, streams),
		newCmdStatus(g, streams), newCmdList(g, streams))
	return cmd
}

// base is what every subcommand shares: the kubeconfig's flags, the
// client and the namespace they resolve to.
type base struct {
	Kube      *cmdutil.KubeFlags
	client    elevation.Client
	namespace string
	genericiooptions.IOStreams
}

func (b *base) bind(cmd *cobra.Command, g *cmdutil.GlobalOptions) {
	b.Kube = cmdutil.NewKubeFlags(cmd.Flags(), g.Env)
	b.Kube.RegisterCompletions(cmd)
}

// complete builds the client and resolves the namespace as kubectl does
// (-n, else the context's, else default).
func (b *base) complete() error {
	c, err := b.Kube.APIClient()
	if err != nil {
		return err
	}
	b.client = c
	if b.namespace, _, err = b.Kube.ClientConfig().Namespace(); err != nil {
		return fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
	}
	return nil
}

// until says how long is left before t, from this machine's clock (the
// grant's end itself is the server's).
func until(t, now time.Time) string {
	if !now.Before(t) {
		return "ended"
	}
	return t.Sub(now).Round(time.Second).String()
}

// table writes rows under header, escaped: the names come from the cluster.
func table(w io.Writer, header string, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		for i, c := range r {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, logging.Printable(c))
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush()
}
