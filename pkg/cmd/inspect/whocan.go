package inspect

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"

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
	// BySubject groups the answer by subject, with where each may act.
	BySubject bool
	Output    *cmdutil.OutputFlags
	target    rbac.Target
	client    whoCanClient
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
	cmd.Flags().BoolVar(&o.BySubject, "by-subject", false, "One line per subject, with the namespaces it may act in (every one, through a ClusterRoleBinding) and the bindings that grant it; with -A, where across the cluster each subject may do it")
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
	var v any = grants
	table := func(w io.Writer) { printGrants(w, grants) }
	if o.BySubject {
		subjects := bySubject(grants)
		v, table = subjects, func(w io.Writer) { printSubjects(w, subjects) }
	}
	return o.Output.Print(o.Out, v, func(w io.Writer) {
		if e := rbac.Escalation(o.target.Verb, o.target.Group, o.target.Resource); e != "" && o.target.NonResourceURL == "" {
			fmt.Fprintf(w, "%s %s is %s.\n", logging.Printable(o.target.Verb), logging.Printable(o.target.ResourceDisplay()), e)
		}
		if len(grants) == 0 {
			fmt.Fprintf(w, "No binding grants %s %s %s.\n", logging.Printable(o.target.Verb), logging.Printable(o.target.ResourceDisplay()), logging.Printable(o.target.Where()))
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

// SubjectAccess is one subject of who-can --by-subject: where it may act
// (every namespace through a ClusterRoleBinding, or the namespaces of its
// RoleBindings) and the bindings that grant it.
type SubjectAccess struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Namespace is a service account's.
	Namespace   string   `json:"namespace,omitempty"`
	ClusterWide bool     `json:"clusterWide"`
	Namespaces  []string `json:"namespaces,omitempty"`
	// Bindings are "ClusterRoleBinding NAME" and "RoleBinding NS/NAME".
	Bindings []string `json:"bindings"`
	// Denied is the chain's denial (--verify), where it denies.
	Denied string `json:"denied,omitempty"`
}

// bySubject groups grants by subject, a service account subject without a
// namespace taking its RoleBinding's (as RBAC does), sorted by kind and name.
func bySubject(grants []rbac.Grant) []SubjectAccess {
	index := map[string]*SubjectAccess{}
	var keys []string
	for _, g := range grants {
		binding := g.BindingKind + " " + g.Binding
		if g.Namespace != "" {
			binding = g.BindingKind + " " + g.Namespace + "/" + g.Binding
		}
		for _, sub := range g.Subjects {
			if sub.Kind == rbacv1.ServiceAccountKind && sub.Namespace == "" {
				sub.Namespace = g.Namespace
			}
			key := subjectName(sub)
			a, ok := index[key]
			if !ok {
				a = &SubjectAccess{Kind: sub.Kind, Name: sub.Name}
				if sub.Kind == rbacv1.ServiceAccountKind {
					a.Namespace = sub.Namespace
				}
				index[key] = a
				keys = append(keys, key)
			}
			a.Bindings = append(a.Bindings, binding)
			if g.BindingKind == "ClusterRoleBinding" {
				a.ClusterWide = true
			} else if !slices.Contains(a.Namespaces, g.Namespace) {
				a.Namespaces = append(a.Namespaces, g.Namespace)
			}
			if reason, denied := g.Denied[key]; denied && a.Denied == "" {
				a.Denied = reason
			}
		}
	}
	slices.Sort(keys)
	out := make([]SubjectAccess, 0, len(keys))
	for _, k := range keys {
		a := index[k]
		slices.Sort(a.Namespaces)
		if a.ClusterWide {
			a.Namespaces = nil // every one
		}
		out = append(out, *a)
	}
	return out
}

// printSubjects is who-can --by-subject's table.
func printSubjects(w io.Writer, subjects []SubjectAccess) {
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
