// Package sudo holds kubectl impersonate sudo: time-boxed, approved
// elevation's commands over its state in the cluster (pkg/cluster/elevation).
//
//   - request, approve, deny, revoke: make, refuse and end grants, as the cluster's
//     admission allows (deploy/sudo/admission.yaml).
//
//   - status: your grants and their time left; list: requests awaiting
//     approval.
//
//   - sudo -- COMMAND and shell: run a client under a live grant, through
//     the impersonating proxy that enforces it (pkg/server/sudo).
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
	o := &RunOptions{base: base{IOStreams: streams}, global: g, now: time.Now}
	run := &cobra.Command{RunE: g.RunE(o)}
	cmd := &cobra.Command{
		Use:   "sudo",
		Short: "Time-boxed, approved elevation: request a role for a while, approve, revoke, see what is held",
		Long: `sudo manages time-boxed, approved elevation in a namespace: a person requests a
role for a while with a reason, someone else approves, and the grant ends at its
creation time (kube-apiserver's clock) plus its duration. The state lives in the
cluster (deploy/sudo: SudoPolicy, SudoRequest, SudoGrant), guarded by its
admission policies. The impersonating proxy (kubectl-impersonate proxy --sudo)
enforces a grant: a request that asks for it (as sudo -- COMMAND and sudo shell
write it) goes upstream as you plus the grant's group, with its reason, ticket
and name in kube-apiserver's audit log, until it ends (docs/elevation.md).

sudo -- COMMAND runs COMMAND under your live grant in the namespace (--grant to
choose), as sudo shell runs your shell. With --direct (no proxy, Kubernetes
1.36+, kubectl-impersonate sudo-controller running), the command impersonates
you with the grant's group straight to kube-apiserver.`,
		Example: `  # Ask for edit in payments for 30 minutes; someone else approves
  kubectl impersonate sudo request -n payments --role edit --for 30m --reason "INC-7 checkout down" --ticket INC-7
  kubectl impersonate sudo approve sudo-7x2kq -n payments

  # Run one command, or a shell, under your live grant
  kubectl impersonate sudo -n payments -- kubectl rollout restart deployment/checkout
  kubectl impersonate sudo shell -n payments`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
				return fmt.Errorf("unknown command %q for sudo: give the command to run after --", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return run.RunE(cmd, args)
		},
	}
	o.bindRun(cmd, g)
	cmd.AddCommand(newCmdRequest(g, streams), newCmdApprove(g, streams), newCmdDeny(g, streams),
		newCmdRevoke(g, streams),
		newCmdStatus(g, streams), newCmdList(g, streams), newCmdShell(g, streams), newCmdReport(g, streams))
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
