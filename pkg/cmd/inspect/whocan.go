package inspect

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"

	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"golang.org/x/sync/errgroup"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/rbac"
)

// WhoCanOptions is the who-can command.
type WhoCanOptions struct {
	Kube          *cmdutil.KubeFlags
	AllNamespaces bool
	// Verify asks the authorizer chain about every subject listed.
	Verify bool
	Output *cmdutil.OutputFlags
	target rbac.Target
	client whoCanClient
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
		RunE: cmdutil.RunE(o),
	}
	o.Kube = cmdutil.NewKubeFlags(cmd.Flags())
	o.Kube.RegisterCompletions(cmd)
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "RoleBindings of every namespace")
	cmd.Flags().BoolVar(&o.Verify, "verify", false, "Ask the authorizer chain (SubjectAccessReview) about each subject listed, and report those another authorizer denies")
	o.Output = cmdutil.NewOutputFlags(cmd.Flags(), "a table")
	return cmd
}

// Complete reads the arguments and the namespace, and builds the client.
func (o *WhoCanOptions) Complete(args []string) error {
	// -o is checked before the kubeconfig is read, as before any request.
	if err := o.Output.Validate(); err != nil {
		return err
	}
	ns, _, err := o.Kube.ClientConfig().Namespace()
	if err != nil {
		return err
	}
	if o.AllNamespaces {
		ns = ""
	}
	o.target = parseTarget(args, ns)
	o.client, _, err = o.Kube.Client()
	return err
}

// Validate checks -o.
func (o *WhoCanOptions) Validate() error { return o.Output.Validate() }

// Run reads RBAC and matches it.
func (o *WhoCanOptions) Run(ctx context.Context) error {
	t, err := resolveTarget(ctx, o.client, o.target, cmdutil.Notifier(o.ErrOut))
	if err != nil {
		return err
	}
	// RBAC objects are read in the namespace asked about, even for a
	// check the server makes at cluster scope (a RoleBinding grants it
	// nowhere, and WhoCan says so), so that reading needs no more.
	readNS := t.Namespace
	if rbac.ClusterScoped(t) {
		t.Namespace = ""
	}
	o.target = t
	bindings, err := o.client.ReadRBAC(ctx, readNS)
	if err != nil {
		return fmt.Errorf("%w (who-can needs to list roles and bindings)", err)
	}
	grants := bindings.WhoCan(o.target)
	if grants == nil {
		grants = []rbac.Grant{}
	}
	if o.Verify {
		if err := o.verify(ctx, grants); err != nil {
			return err
		}
	}
	return o.Output.Print(o.Out, grants, func(w io.Writer) {
		if e := rbac.Escalation(o.target.Verb, o.target.Group, o.target.Resource); e != "" && o.target.NonResourceURL == "" {
			fmt.Fprintf(w, "%s %s is %s.\n", logging.Printable(o.target.Verb), logging.Printable(o.target.ResourceDisplay()), e)
		}
		if len(grants) == 0 {
			fmt.Fprintf(w, "No binding grants %s %s %s.\n", logging.Printable(o.target.Verb), logging.Printable(o.target.ResourceDisplay()), logging.Printable(o.target.Where()))
		} else {
			printGrants(w, grants)
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
const rbacOnlyNote = "These are the RBAC bindings only: an authorizer before or after RBAC (a webhook) may decide otherwise; \"kubectl impersonate why VERB RESOURCE --as=USER\" asks the cluster."

// verify asks the chain about each subject of each grant (8 at a time),
// where the grant applies: a RoleBinding's subjects in its namespace, a
// ClusterRoleBinding's where the question is asked; and records, on each
// grant, the subjects it denies.
func (o *WhoCanOptions) verify(ctx context.Context, grants []rbac.Grant) error {
	type question struct {
		subject rbacv1.Subject
		target  rbac.Target
	}
	verdicts := map[string]string{} // subject@namespace → "" (allowed) or the denial
	var questions []question
	key := func(s rbacv1.Subject, ns string) string { return subjectName(s) + "@" + ns }
	where := func(g rbac.Grant) rbac.Target {
		t := o.target
		if g.BindingKind == "RoleBinding" {
			t.Namespace = g.Namespace
		}
		return t
	}
	for _, g := range grants {
		t := where(g)
		for _, s := range g.Subjects {
			if _, seen := verdicts[key(s, t.Namespace)]; !seen {
				verdicts[key(s, t.Namespace)] = ""
				questions = append(questions, question{s, t})
			}
		}
	}
	var mu sync.Mutex
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(8)
	for _, q := range questions {
		eg.Go(func() error {
			st, err := o.client.VerifySubject(ectx, q.subject, q.target)
			if err != nil {
				return err
			}
			if !st.Allowed {
				reason := st.Reason
				if reason == "" {
					reason = "denied by the authorizer chain"
				}
				mu.Lock()
				verdicts[key(q.subject, q.target.Namespace)] = reason
				mu.Unlock()
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return err
	}
	for i := range grants {
		ns := where(grants[i]).Namespace
		for _, s := range grants[i].Subjects {
			if reason := verdicts[key(s, ns)]; reason != "" {
				if grants[i].Denied == nil {
					grants[i].Denied = map[string]string{}
				}
				grants[i].Denied[subjectName(s)] = reason
			}
		}
	}
	return nil
}

// subjectName is Kind:name, Kind:namespace/name for a service account.
func subjectName(s rbacv1.Subject) string {
	if s.Kind == rbacv1.ServiceAccountKind {
		return s.Kind + ":" + s.Namespace + "/" + s.Name
	}
	return s.Kind + ":" + s.Name
}

// printDenied ends a verified table: the subjects the chain denies, or that
// it confirms them all.
func printDenied(w io.Writer, grants []rbac.Grant) {
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
		fmt.Fprintln(w, "Verified: the authorizer chain allows every subject listed, each asked as a synthetic member (SubjectAccessReview: a user with the authenticated group, a group's member, a service account); a real member's other groups may still be decided otherwise.")
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
