package authz

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/inspect"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbaceval"
	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
)

// WhyOptions is the why command.
type WhyOptions struct {
	Kube   *cmdutil.KubeFlags
	Output *cmdutil.OutputFlags
	// Quiet prints nothing: the exit code is the answer (kubectl auth can-i -q).
	Quiet  bool
	target rbaceval.Target
	// readNS is where the target's RBAC objects are read (WhyTarget).
	readNS string
	client inspect.WhyClient
	genericiooptions.IOStreams
	global *cmdutil.GlobalOptions
}

// NewCmdWhy builds why.
func NewCmdWhy(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &WhyOptions{IOStreams: streams, global: g}
	cmd := &cobra.Command{
		Use:   "why VERB RESOURCE[.GROUP][/SUBRESOURCE] [NAME]",
		Short: "Whether you may do something, the authorizer's reason, and the bindings that grant it to you",
		Long: `why asks a SelfSubjectAccessReview for VERB on RESOURCE (NAME) and prints the
decision with the authorizer's reason (RBAC names the binding that allows).
If you may read RBAC objects, it also lists the RoleBindings and
ClusterRoleBindings that grant it to you, through your user, your groups or
system:authenticated. RESOURCE is resolved as kubectl resolves it (short names,
kinds, resource.group, resource.version.group, subresources). As kubectl auth
can-i, it exits 0 when the answer is yes and 1 when it is no (-q: the exit code
alone).`,
		Example: `  kubectl impersonate why list pods -n team-a
  kubectl impersonate why update deployments.apps/scale web -n team-a --as=bob@example.com`,
		Args: cobra.RangeArgs(2, 3),
		RunE: g.RunE(o),
	}
	o.Kube = cmdutil.NewKubeFlags(cmd.Flags(), g.Env)
	o.Kube.RegisterCompletions(cmd)
	cmd.ValidArgsFunction = o.Kube.CompleteVerbResource
	o.Output = cmdutil.NewOutputFlags(cmd.Flags(), "text")
	cmd.Flags().BoolVarP(&o.Quiet, "quiet", "q", false, "If true, suppress output and just return the exit code (0: "+
		"yes, 1: no)")
	return cmd
}

// Complete reads the arguments and the namespace, builds the client and
// resolves the target through discovery (resolveArgs).
func (o *WhyOptions) Complete(ctx context.Context, args []string) error {
	ns, _, err := o.Kube.ClientConfig().Namespace()
	if err != nil {
		return err
	}
	o.target = parseTarget(args, ns)
	if o.client, _, err = o.Kube.Client(); err != nil {
		return err
	}
	return o.resolveArgs(ctx)
}

// resolveArgs resolves the target's resource as kubectl auth can-i does,
// in Complete (inspect.WhyTarget).
func (o *WhyOptions) resolveArgs(ctx context.Context) (err error) {
	o.target, o.readNS, err = inspect.WhyTarget(ctx, o.client, o.target, cmdutil.Notifier(o.ErrOut))
	return err
}

// parseTarget is VERB RESOURCE [NAME] in namespace ns.
func parseTarget(args []string, ns string) rbaceval.Target {
	name := ""
	if len(args) == 3 {
		name = args[2]
	}
	return rbaceval.ParseTarget(args[0], args[1], name, ns)
}

// ValidateFlags checks -o, before anything is read.
func (o *WhyOptions) ValidateFlags() error { return o.Output.Validate() }

// Run asks the authorizer (why's use case, unless
// -q wants the answer alone) and prints; the exit code is the answer, as
// kubectl auth can-i's: 0 yes, 1 no.
func (o *WhyOptions) Run(ctx context.Context) error {
	t, readNS := o.target, o.readNS
	if o.Quiet {
		st, err := o.client.Why(ctx, t)
		if err != nil {
			return err
		}
		return answer(st.Allowed)
	}
	res, err := inspect.Why(ctx, o.client, t, readNS)
	if err != nil {
		return err
	}
	if err := o.Output.Print(o.Out, res, func(w io.Writer) { printWhy(w, t, res) }); err != nil {
		return err
	}
	return answer(res.Allowed)
}

// answer is kubectl auth can-i's exit code: 0 yes, 1 no.
func answer(allowed bool) error {
	if allowed {
		return nil
	}
	return cmdutil.ExitCode(1)
}

// printWhy is why's text: the verdict, the reason, and what explains it.
func printWhy(w io.Writer, t rbaceval.Target, res *inspect.WhyResult) {
	yes, works := map[bool]string{true: "yes", false: "no"}, map[bool]string{true: "works", false: "fails"}
	fmt.Fprintf(w, "%s: may %s %s %s? %s\n", logging.Printable(res.Username), logging.Printable(t.Verb),
		logging.Printable(t.ResourceDisplay()), logging.Printable(t.Where()), yes[res.Allowed])
	if res.Reason != "" {
		fmt.Fprintf(w, "Reason: %s\n", logging.Printable(res.Reason))
	}
	if res.RBACNote != "" {
		fmt.Fprintln(w, logging.Printable(res.RBACNote))
	}
	switch {
	case res.DecidedElsewhere && res.Allowed:
		fmt.Fprintln(w, "No RBAC binding grants it to you: another authorizer of the chain (such as a webhook) "+
			"allowed it.")
	case res.DecidedElsewhere:
		fmt.Fprintln(w, "RBAC grants it to you (the bindings below), but another authorizer of the chain (such as a "+
			"webhook) denied it.")
	}
	if sa := res.Streaming; sa != nil {
		fmt.Fprintf(w, "%s: %s (since Kubernetes 1.35 it needs get and create on %s over WebSockets: get %s, create "+
			"%s)\n", sa.Command, works[sa.Works], t.ResourceDisplay(), yes[sa.Get], yes[sa.Create])
	}
	if res.Risk.Risky() {
		fmt.Fprintf(w, "This is %s.\n", res.Risk.Why)
	}
	if ip := res.Impersonation; ip != nil {
		where := ""
		if ip.Namespace != "" {
			where = " in namespace " + logging.Printable(ip.Namespace)
		}
		fmt.Fprintf(w, "Constrained impersonation path: %s (%s%s, any name: %s; %s: %s)\n", works[ip.Works],
			ip.Identity, where, yes[ip.IdentityAllowed], logging.Printable(t.Verb), yes[ip.On])
		if !ip.IdentityAllowed {
			fmt.Fprintf(w, "A grant of %s for some names only is not seen here: ask \"kubectl impersonate why %s "+
				"NAME\".\n", ip.Identity, ip.Identity)
		}
	}
	for _, n := range res.Sudo {
		fmt.Fprintln(w, logging.Printable(n.String()))
	}
	printGrants(w, res.Grants)
}

func printGrants(w io.Writer, grants []rbaceval.Grant) {
	if len(grants) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "BINDING\tNAMESPACE\tROLE\tSUBJECTS")
	for _, g := range grants {
		var subs []string
		for _, s := range g.Subjects {
			n := s.Kind + ":" + s.Name
			if s.Kind == "ServiceAccount" {
				n = s.Kind + ":" + s.Namespace + "/" + s.Name
			}
			subs = append(subs, logging.Printable(n))
		}
		ns := g.Namespace
		if ns == "" {
			ns = "(cluster)"
		}
		fmt.Fprintf(tw, "%s/%s\t%s\t%s/%s\t%s\n", logging.Printable(g.BindingKind), logging.Printable(g.Binding),
			logging.Printable(ns), logging.Printable(g.RoleKind), logging.Printable(g.Role), strings.Join(subs, ", "))
	}
	_ = tw.Flush()
}
