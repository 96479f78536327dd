package authz

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/inspect"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbac"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/resource"
	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
)

// ListOptions is the list command.
type ListOptions struct {
	Kube          *cmdutil.KubeFlags
	Resource      string
	Selector      string
	AllNamespaces bool
	ProjectLabel  string
	Verbs         []string
	TokenIdentity bool
	ShowDenied    bool
	Method        rbac.Source
	// RBACObjects: across namespaces, evaluate the RBAC objects read once
	// instead of one rules review per namespace (see inspect.LocalRules).
	RBACObjects bool
	// caller (lists), target (reviewed), identity (the target's
	// description), impersonate, namespace and resource (the argument,
	// resolved) are Complete's.
	caller, target inspect.ListClient
	identity       string
	impersonate    func(user string, groups []string, uid string, extra map[string][]string) (inspect.ListClient, error)
	namespace      string
	resource       resource.Resource
	Output         *cmdutil.OutputFlags
	genericiooptions.IOStreams
	global *cmdutil.GlobalOptions
	now    func() time.Time
}

// NewCmdList builds list.
func NewCmdList(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	cmd, _ := newCmdList(g, streams)
	return cmd
}

func newCmdList(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) (*cobra.Command, *ListOptions) {
	o := &ListOptions{IOStreams: streams, global: g, Verbs: []string{"get"}, Method: rbac.FromRules, RBACObjects: true,
		now: time.Now}
	cmd := &cobra.Command{
		Use:   "list RESOURCE",
		Short: "List the objects an identity may act on, across a namespace, a project's namespaces or all",
		Long: `list lists the objects of RESOURCE as you (you need list rights), then keeps only
those the target identity may act on: --as/--as-group, or --token-identity (exactly
the user, groups and extra the API server sees for your credentials), or yourself.

RBAC rules with resourceNames make a plain "list" forbidden while some named
objects are allowed; this answers "what can this identity see here?". Per
namespace it asks one SelfSubjectRulesReview (16 at a time) and matches the rules
locally, resourceNames included; a SelfSubjectAccessReview is sent only where the
rules review cannot settle a verb (it says incomplete, or the resource is
cluster-scoped). Across namespaces (-A, --project-label) it instead reads the
RBAC objects once, with your own rights, and evaluates them for every namespace
as RBAC does (--rbac-objects), when one rules review shows RBAC is the only
authorizer and gives the same rules.

--project-label KEY=VALUE first selects the namespaces carrying that label (a
project), then lists inside them. -o json|yaml print a v1 List of the objects
kept, as "kubectl get -o json" would; the verbs and reasons are in the table
(-o wide adds how each object was decided and the denied verbs with reasons).`,
		Example: `  # The ConfigMaps the group "viewers" may get in every namespace of project a
  kubectl impersonate list configmaps --project-label=project=a --as=someone --as-group=viewers

  # Secrets in team-a your own token's identity may get or delete, with the denied ones
  kubectl impersonate list secrets -n team-a --token-identity --verb=get --verb=delete --show-denied

  # Names only, across all namespaces, with a label selector
  kubectl impersonate list deployments.apps -A -l tier=web --as=bob@example.com -o name`,
		Args: cobra.ExactArgs(1),

		RunE: g.RunE(o),
	}
	o.Kube = cmdutil.NewKubeFlags(cmd.Flags(), g.Env)
	o.Kube.RegisterCompletions(cmd)
	cmd.ValidArgsFunction = func(
		c *cobra.Command, args []string, toComplete string,
	) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return o.Kube.CompleteResources(c, args, toComplete)
	}
	f := cmd.Flags()
	f.StringVarP(&o.Selector, "selector", "l", "", "Label selector of the objects (e.g. -l app=web)")
	f.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "List across all namespaces")
	f.StringVar(&o.ProjectLabel, "project-label", "", "List in the namespaces carrying this label, KEY=VALUE (a "+
		"project)")
	f.StringSliceVar(&o.Verbs, "verb", o.Verbs, "Verb the identity must be allowed (repeatable, or comma-separated, "+
		"as in access; an object is kept if any is allowed)")
	f.BoolVar(&o.TokenIdentity, "token-identity", false, "Review as exactly the username, groups, UID and extra the "+
		"API server reports for your credentials (needs the impersonate permission)")
	f.BoolVar(&o.ShowDenied, "show-denied", false, "Also show the objects not allowed, with the reason")
	f.StringVar((*string)(&o.Method), "method", string(o.Method), "rules (a rules review per namespace, access "+
		"reviews where needed) or ssar (an access review per object and verb)")
	f.BoolVar(&o.RBACObjects, "rbac-objects", o.RBACObjects, "With -A or --project-label: read the RBAC objects once "+
		"(4 lists, with your own rights) and evaluate them for every namespace, when you may read them and a rules "+
		"review shows RBAC is the only authorizer and gives the same rules; false: one rules review per namespace")
	o.Output = cmdutil.NewOutputFlags(f, "a table", "wide", "name")
	return cmd, o
}

// Complete builds the clients (the caller's own, which lists, and the
// reviewed identity's: --as, or --token-identity in Run), reads the
// namespace and resolves the resource through discovery (resolveArgs).
func (o *ListOptions) Complete(ctx context.Context, args []string) error {
	o.Resource = args[0]
	ic, err := o.Kube.IdentityClients()
	if err != nil {
		return err
	}
	// The caller lists; the target (itself, or --as) is reviewed.
	o.caller, o.target, o.identity = ic.Caller, ic.Target, ic.Identity
	o.impersonate = func(
		user string, groups []string, uid string, extra map[string][]string,
	) (inspect.ListClient, error) {
		return ic.Impersonate(user, groups, uid, extra)
	}
	if !o.AllNamespaces && o.ProjectLabel == "" {
		if o.namespace, _, err = o.Kube.ClientConfig().Namespace(); err != nil {
			return err
		}
	}
	return o.resolveArgs(ctx)
}

// resolveArgs resolves the resource argument through discovery, as
// kubectl resolves its arguments in Complete.
func (o *ListOptions) resolveArgs(ctx context.Context) (err error) {
	o.resource, err = inspect.ListResource(ctx, o.caller, o.Resource, cmdutil.Notifier(o.ErrOut))
	return err
}

// ValidateFlags checks the flags, before anything is read.
func (o *ListOptions) ValidateFlags() error {
	switch {
	case o.AllNamespaces && o.ProjectLabel != "":
		return errors.New("give -A or --project-label, not both")
	case (o.AllNamespaces || o.ProjectLabel != "") && o.Kube.NamespaceFlag() != "":
		return errors.New("-n selects one namespace: drop it, or drop -A / --project-label")
	case o.TokenIdentity && o.Kube.Impersonates():
		return errors.New("give --as/--as-group or --token-identity, not both")
	case !slices.Contains(rbac.Methods, o.Method):
		return fmt.Errorf("--method %q is not one of %s, %s", o.Method, rbac.FromRules, rbac.FromAccessReview)
	}
	if o.ProjectLabel != "" {
		k, v, ok := strings.Cut(o.ProjectLabel, "=")
		if !ok || k == "" || v == "" || strings.ContainsAny(v, ",=!") {
			return fmt.Errorf("--project-label %q is not KEY=VALUE (e.g. --project-label=project=a)", o.ProjectLabel)
		}
	}
	if err := validateVerbs(o.Verbs); err != nil {
		return err
	}
	return o.Output.Validate()
}

// Run resolves the identity reviewed (--token-identity), lists and
// decides (list's use case), and prints.
func (o *ListOptions) Run(ctx context.Context) error {
	q := inspect.ListRequest{Caller: o.caller, Target: o.target, Identity: o.identity, Resource: o.resource,
		Selector:  o.Selector,
		Namespace: o.namespace, AllNamespaces: o.AllNamespaces, ProjectLabel: o.ProjectLabel, Verbs: o.Verbs,
		ForceSSAR: o.Method == rbac.FromAccessReview, RBACObjects: o.RBACObjects, Full: !o.Output.Human(),
		Verbose: o.global.Verbosity >= 1, Warn: cmdutil.Notifier(o.ErrOut)}
	if o.TokenIdentity {
		ui, _, err := o.caller.WhoAmI(ctx)
		if err != nil {
			return err
		}
		if q.Target, err = o.impersonate(ui.Username, ui.Groups, ui.UID, inspect.ExtraOf(ui.Extra)); err != nil {
			return err
		}
		q.Identity = cmdutil.DescribeIdentity(ui.Username, ui.Groups)
	}
	terminal := o.global.IsTerminal(o.ErrOut)
	if terminal {
		// A progress line while the rules reviews are asked (none when
		// stderr is not a terminal).
		q.Progress = func(done, total int) {
			if total >= 20 {
				progressLine(o.ErrOut, done, total, "reviewing the rules: %d/%d namespaces", done, total)
			}
		}
	}
	r, err := inspect.List(ctx, q)
	if err != nil {
		if terminal {
			logging.StatusLine(o.ErrOut, "")
		}
		return err
	}
	if o.ProjectLabel != "" && len(r.Namespaces) == 0 {
		fmt.Fprintf(o.ErrOut, "no namespace carries the label %s (or you may not list it)\n", o.ProjectLabel)
	}
	return o.print(r)
}

func (o *ListOptions) print(r *inspect.ListResult) error {
	var kept []rbac.Decision
	for _, d := range r.Decisions {
		if len(d.Allowed) > 0 {
			kept = append(kept, d)
		}
	}
	what := strings.Join(o.Verbs, "|")
	if o.global.Verbosity >= 1 || len(kept) == 0 {
		local := ""
		if r.Check > 0 {
			local = fmt.Sprintf(", %d to read the RBAC objects and check them", r.Check)
		}
		if n := r.Stats.FromRBACObjects; n > 0 {
			local += fmt.Sprintf(" (the rules of %d namespaces from them)", n)
		}
		fmt.Fprintf(o.ErrOut, "%d of %d %s allowed to %s for %s; requests after discovery: %d list, %d rules "+
			"reviews, %d access reviews%s\n",
			len(kept), len(r.Decisions), logging.Printable(r.Resource.String()), what, logging.Printable(r.Identity),
			r.Lists, r.Stats.RulesReviews, r.Stats.AccessReviews, local)
	}
	switch inc := r.Stats.Incomplete; {
	case len(inc) > 3:
		fmt.Fprintf(o.ErrOut, "note: the rules reviews in %d namespaces (%s, ...) are incomplete (an authorizer "+
			"other than RBAC): denials there come from access reviews\n",
			len(inc), logging.Printable(strings.Join(inc[:3], ", ")))
	default:
		for _, ns := range inc {
			fmt.Fprintf(o.ErrOut, "note: the rules review in namespace %s is incomplete (an authorizer other than "+
				"RBAC): denials there come from access reviews\n", logging.Printable(ns))
		}
	}
	switch {
	case !o.Output.Human():
		items := make([]json.RawMessage, 0, len(kept))
		for _, d := range kept {
			items = append(items, d.Raw)
		}
		return o.Output.Print(o.Out,
			map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""},
				"items": items}, nil)
	case o.Output.Format == "name":
		// kubectl's -o name (printers.NamePrinter's kind.group/name, from
		// the object's own kind), with the name escaped.
		kind := strings.ToLower(r.Resource.Kind)
		if r.Resource.Group != "" {
			kind += "." + r.Resource.Group
		}
		for _, d := range kept {
			fmt.Fprintf(o.Out, "%s/%s\n", kind, logging.Printable(d.Name))
		}
		return nil
	}
	rows := kept
	if o.ShowDenied {
		rows = r.Decisions
	}
	o.printTable(o.Out, r, rows)
	return nil
}

func (o *ListOptions) printTable(w io.Writer, r *inspect.ListResult, rows []rbac.Decision) {
	if len(rows) == 0 {
		return // as kubectl get: the count went to stderr
	}
	withNS := r.Resource.Namespaced && (len(r.Namespaces) != 1 || r.Namespaces[0] == "")
	wide := o.Output.Format == "wide"
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	var head []string
	if withNS {
		head = append(head, "NAMESPACE")
	}
	head = append(head, "NAME", "AGE", "VERBS")
	if o.ShowDenied || wide {
		head = append(head, "DENIED")
	}
	if wide {
		head = append(head, "DECIDED-BY")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	now := o.now()
	for _, d := range rows {
		var cols []string
		if withNS {
			cols = append(cols, d.Namespace)
		}
		verbs := strings.Join(d.Allowed, ",")
		if verbs == "" {
			verbs = "<none>"
		}
		age := "<unknown>"
		if !d.Created.IsZero() {
			age = duration.HumanDuration(now.Sub(d.Created))
		}
		cols = append(cols, d.Name, age, verbs)
		if o.ShowDenied || wide {
			var denied []string
			for _, v := range o.Verbs {
				if why, ok := d.Denied[v]; ok {
					denied = append(denied, v+": "+why)
				}
			}
			if len(denied) == 0 {
				denied = []string{"<none>"}
			}
			cols = append(cols, strings.Join(denied, "; "))
		}
		if wide {
			by := map[rbac.Source]string{rbac.FromRules: "rules-review",
				rbac.FromAccessReview: "access-review"}[d.Source]
			if len(d.DecidedElsewhere) > 0 {
				// Against RBAC's rules: another authorizer (a webhook).
				by += " (another authorizer: " + strings.Join(d.DecidedElsewhere, ",") + ")"
			}
			cols = append(cols, by)
		}
		for i := range cols {
			cols[i] = logging.Printable(cols[i]) // names and reasons are the API server's
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	_ = tw.Flush()
}
