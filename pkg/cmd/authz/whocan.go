package authz

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/inspect"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbaceval"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbacgraph"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/risk"
	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
)

// WhoCanOptions is the who-can command.
type WhoCanOptions struct {
	Kube          *cmdutil.KubeFlags
	AllNamespaces bool
	// Verify asks the authorizer chain about every subject listed.
	Verify bool
	// BySubject groups the answer by subject, with where each may act.
	BySubject bool
	// Graph draws the grants instead (rbacgraph).
	Graph  bool
	Output *cmdutil.OutputFlags
	target rbaceval.Target
	readNS string
	client inspect.WhoCanClient
	genericiooptions.IOStreams
	global *cmdutil.GlobalOptions
}

// NewCmdWhoCan builds who-can.
func NewCmdWhoCan(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &WhoCanOptions{IOStreams: streams, global: g}
	cmd := &cobra.Command{
		Use:   "who-can VERB (RESOURCE[.GROUP][/SUBRESOURCE] [NAME] | /NON-RESOURCE-URL)",
		Short: "The subjects whose RoleBindings and ClusterRoleBindings grant something, with the binding names",
		Long: `who-can reads the RoleBindings (of the namespace, or -A all namespaces) and
ClusterRoleBindings and their roles, and lists the users, groups and service
accounts granted VERB on RESOURCE, matching wildcards, subresources
(pods/log, */scale) and resourceNames as RBAC does. For a non-resource URL
(a path such as /metrics) only ClusterRoleBindings count, and "/logs/*" style
rules match by prefix, as in kube-apiserver. It needs read access to RBAC
objects; other authorizers (webhooks) are not seen in them: --verify asks the
authorizer chain about each subject listed (a SubjectAccessReview each, which
needs create on subjectaccessreviews) and reports those it denies.`,
		Example: `  kubectl impersonate who-can list pods -n team-a
  kubectl impersonate who-can get configmaps app-settings -A -o yaml
  kubectl impersonate who-can get /metrics`,
		Args: cobra.RangeArgs(2, 3),
		RunE: g.RunE(o),
	}
	o.Kube = cmdutil.NewKubeFlags(cmd.Flags(), g.Env)
	o.Kube.RegisterCompletions(cmd)
	cmd.ValidArgsFunction = o.Kube.CompleteVerbResource
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "RoleBindings of every namespace")
	cmd.Flags().BoolVar(&o.BySubject, "by-subject", false, "One line per subject, with the namespaces it may act in "+
		"(every one, through a ClusterRoleBinding) and the bindings that grant it; with -A, where across the cluster "+
		"each subject may do it")
	cmd.Flags().BoolVar(&o.Verify, "verify", false, "Ask the authorizer chain (SubjectAccessReview) about each "+
		"subject listed, and report those another authorizer denies")
	o.Output = cmdutil.NewOutputFlags(cmd.Flags(), "a table", rbacgraph.Formats...)
	cmd.Flags().BoolVar(&o.Graph, "graph", false, "Draw the subjects, their bindings and roles, and the request "+
		"they grant, an escalation path in red: -o dot (the default), svg, html (a page that pans and zooms "+
		"offline) or json")
	return cmd
}

// Complete reads the arguments and the namespace, builds the client and
// resolves the target (resolveArgs).
func (o *WhoCanOptions) Complete(ctx context.Context, args []string) error {
	ns, _, err := o.Kube.ClientConfig().Namespace()
	if err != nil {
		return err
	}
	if o.AllNamespaces {
		ns = ""
	}
	o.target = parseTarget(args, ns)
	if o.client, _, err = o.Kube.Client(); err != nil {
		return err
	}
	return o.resolveArgs(ctx)
}

// resolveArgs resolves the target's resource as why does, in Complete
// (inspect.WhyTarget): its RBAC objects are read in readNS.
func (o *WhoCanOptions) resolveArgs(ctx context.Context) (err error) {
	o.target, o.readNS, err = inspect.WhyTarget(ctx, o.client, o.target, cmdutil.Notifier(o.ErrOut))
	return err
}

// ValidateFlags checks -o, before anything is read.
func (o *WhoCanOptions) ValidateFlags() error {
	if err := rbacgraph.CheckFormat(o.Graph, o.Output.Format); err != nil {
		return err
	}
	return o.Output.Validate()
}

// Run reads the target's grants (who-can's use case) and
// prints them.
func (o *WhoCanOptions) Run(ctx context.Context) error {
	t := o.target
	grants, err := inspect.WhoCan(ctx, o.client, t, o.readNS, o.Verify)
	if err != nil {
		return err
	}
	if o.Graph {
		return rbacgraph.ForGrants(t, grants).Write(o.Out, o.Output.Format)
	}
	var v any = grants
	table := func(w io.Writer) { printGrants(w, grants) }
	if o.BySubject {
		subjects := inspect.BySubject(grants)
		v, table = subjects, func(w io.Writer) { printSubjects(w, subjects) }
	}
	return o.Output.Print(o.Out, v, func(w io.Writer) {
		if rk := risk.Of(t.Verb, t.Group, t.ResourceWithSub()); rk.Risky() && t.NonResourceURL == "" {
			fmt.Fprintf(w, "%s %s is %s.\n", logging.Printable(t.Verb), logging.Printable(t.ResourceDisplay()),
				rk.Why)
		}
		if len(grants) == 0 {
			fmt.Fprintf(w, "No binding grants %s %s %s.\n", logging.Printable(t.Verb),
				logging.Printable(t.ResourceDisplay()), logging.Printable(t.Where()))
		} else {
			table(w)
		}
		if o.Verify {
			printDenied(w, grants)
			return
		}
		// Said where it is read, not only in --help: the answer is RBAC's.
		fmt.Fprintln(w, rbacOnlyNote)
	})
}

// rbacOnlyNote ends who-can's table: other authorizers of the chain
// (webhooks, Node, ABAC) are not seen in RBAC objects.
const rbacOnlyNote = "These are the RBAC bindings only: an authorizer before or after RBAC (a webhook) may decide " +
	"otherwise; \"kubectl impersonate why VERB RESOURCE --as=USER\" asks the cluster."

// printDenied ends a verified table: the subjects the chain denies, or that
// it confirms them all.
func printDenied(w io.Writer, grants []rbaceval.Grant) {
	denied := map[string]string{}
	for _, g := range grants {
		for s, reason := range g.Denied {
			if g.BindingKind == "RoleBinding" {
				s += " in " + g.Namespace
			}
			denied[s] = reason
		}
	}
	if len(denied) == 0 {
		fmt.Fprintln(w, "Verified: the authorizer chain allows every subject listed, each asked as a synthetic "+
			"member (SubjectAccessReview: a user with the authenticated group, a group's member, a service account); "+
			"a real member's other groups may still be decided otherwise.")
		return
	}
	names := make([]string, 0, len(denied))
	for s := range denied {
		names = append(names, s)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "Verified: the authorizer chain DENIES these subjects although RBAC grants them:")
	for _, s := range names {
		fmt.Fprintf(w, "  %s: %s\n", logging.Printable(s), logging.Printable(denied[s]))
	}
}

// printSubjects is who-can --by-subject's table.
func printSubjects(w io.Writer, subjects []inspect.SubjectAccess) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "SUBJECT\tWHERE\tBINDINGS")
	for _, a := range subjects {
		name := a.Kind + " " + a.Name
		if a.Namespace != "" {
			name = a.Kind + " " + a.Namespace + "/" + a.Name
		}
		where := "every namespace"
		if !a.ClusterWide {
			where = namespaceList(a.Namespaces, 8)
		}
		bindings := strings.Join(a.Bindings, ", ")
		if len(a.Bindings) > 3 {
			bindings = strings.Join(a.Bindings[:3], ", ") + fmt.Sprintf(" (+%d)", len(a.Bindings)-3)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", logging.Printable(name), where, logging.Printable(bindings))
	}
	_ = tw.Flush()
}

// namespaceList is at most max namespaces, then how many more.
func namespaceList(names []string, max int) string {
	shown := names
	if len(names) > max {
		shown = names[:max]
	}
	out := make([]string, len(shown))
	for i, n := range shown {
		out[i] = logging.Printable(n)
	}
	s := strings.Join(out, ",")
	if len(names) > max {
		s += fmt.Sprintf(" (+%d, %d namespaces)", len(names)-max, len(names))
	}
	return s
}
