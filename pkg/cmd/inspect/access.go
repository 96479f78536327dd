package inspect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/rbac"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/settings"
)

// AccessOptions is the access command (alias can-i-matrix).
type AccessOptions struct {
	Kube          *cmdutil.KubeFlags
	AllNamespaces bool
	ClusterScope  bool
	Verbs         []string
	Subresources  bool
	Method        rbac.Source
	Output        *cmdutil.OutputFlags
	TokenIdentity bool
	DiffAs        string
	DiffAsGroups  []string
	// MaxReviews bounds the access reviews of the run (--max-reviews).
	MaxReviews int
	// client, impersonate (a client acting as another identity) and
	// namespace are Complete's.
	client      accessClient
	impersonate func(user string, groups []string, uid string, extra map[string][]string) (accessClient, error)
	namespace   string
	genericiooptions.IOStreams
	global *cmdutil.GlobalOptions
}

// NewCmdAccess builds access.
func NewCmdAccess(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &AccessOptions{IOStreams: streams, global: g}
	cmd := &cobra.Command{
		Use:     "access",
		Aliases: []string{"can-i-matrix"},
		Short:   "Your effective RBAC: resources × verbs for a namespace, every namespace or cluster scope",
		Long: `access asks one SelfSubjectRulesReview per namespace and matches its rules
locally (wildcards, subresources, resourceNames); only cells the review cannot
settle (it says incomplete, or grants for some names only) are asked again with a
SelfSubjectAccessReview. Cluster-scoped resources are always asked per cell.
In the table, ✔ is allowed, ✗ denied, ~ allowed for some resourceNames only,
"·" means the resource has no such verb, and * marks an answer from a SelfSubjectAccessReview.`,
		Example: `  kubectl impersonate access -n team-a
  kubectl impersonate access -n team-a --as=bob@example.com --verb=get,list,create
  kubectl impersonate access --cluster-scope -o json`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(o),
	}
	o.Kube = cmdutil.NewKubeFlags(cmd.Flags())
	o.Kube.RegisterCompletions(cmd)
	f := cmd.Flags()
	f.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "One matrix per namespace")
	f.BoolVar(&o.ClusterScope, "cluster-scope", false, "The cluster-scoped resources instead of a namespace's")
	f.StringSliceVar(&o.Verbs, "verb", rbac.DefaultVerbs, "The verb columns (repeatable, or comma-separated)")
	f.IntVar(&o.MaxReviews, "max-reviews", 2000, "At most this many access reviews in all (an authorizer besides RBAC makes every cell one); more is refused before any is sent (0: no limit)")
	settings.AliasFlag(f, "verbs", "verb", streams.ErrOut)
	f.BoolVar(&o.Subresources, "subresources", false, "Include subresources (pods/log, deployments/scale, ...)")
	f.StringVar((*string)(&o.Method), "method", string(rbac.FromRules), "rules (a rules review, then access reviews where needed) or ssar (one access review per cell)")
	o.Output = cmdutil.NewOutputFlags(f, "a table")
	f.BoolVar(&o.TokenIdentity, "token-identity", false, "Impersonate exactly the username, groups, UID and extra the API server reports for the current credentials (what --as alone loses; needs the impersonate permission)")
	f.StringVar(&o.DiffAs, "diff-as", "", "Also build the matrix as this user (impersonation) and show only the cells where the two differ")
	f.StringSliceVar(&o.DiffAsGroups, "diff-as-group", nil, "Groups for --diff-as (repeatable)")
	return cmd
}

// Complete builds the clients and reads the namespace.
func (o *AccessOptions) Complete(args []string) error {
	// -o is checked before the kubeconfig is read, as before any request.
	if err := o.Output.Validate(); err != nil {
		return err
	}
	cfg, err := o.Kube.Config()
	if err != nil {
		return err
	}
	if o.client, err = cmdutil.NewRBACClient(cfg); err != nil {
		return err
	}
	o.impersonate = func(user string, groups []string, uid string, extra map[string][]string) (accessClient, error) {
		return cmdutil.ImpersonatingClient(cfg, user, groups, uid, extra)
	}
	if !o.AllNamespaces && !o.ClusterScope {
		o.namespace, _, err = o.Kube.ClientConfig().Namespace()
	}
	return err
}

// Validate checks the flags.
func (o *AccessOptions) Validate() error {
	if o.AllNamespaces && o.ClusterScope {
		return errors.New("give -A or --cluster-scope, not both")
	}
	if len(o.DiffAsGroups) > 0 && o.DiffAs == "" {
		return errors.New("--diff-as-group takes effect with --diff-as only")
	}
	if !slices.Contains(rbac.Methods, o.Method) {
		return fmt.Errorf("--method %q is not one of %s, %s", o.Method, rbac.FromRules, rbac.FromAccessReview)
	}
	if err := validateVerbs(o.Verbs); err != nil {
		return err
	}
	return o.Output.Validate()
}

// validateVerbs is --verb's one meaning in access and list: repeatable or
// comma-separated (pflag's string slice), each a verb.
func validateVerbs(verbs []string) error {
	if len(verbs) == 0 {
		return errors.New("--verb must name at least one verb")
	}
	for _, v := range verbs {
		if v == "" || strings.ContainsAny(v, " \t") {
			return fmt.Errorf("--verb %q is not a verb: give verbs separated by commas, or --verb once per verb", v)
		}
	}
	return nil
}

// Run builds the matrices.
func (o *AccessOptions) Run(ctx context.Context) error {
	client := o.client
	if o.TokenIdentity {
		ui, _, err := client.WhoAmI(ctx)
		if err != nil {
			return err
		}
		if client, err = o.impersonate(ui.Username, ui.Groups, ui.UID, ExtraOf(ui.Extra)); err != nil {
			return err
		}
	}
	var other accessClient
	if o.DiffAs != "" {
		var err error
		if other, err = o.impersonate(o.DiffAs, o.DiffAsGroups, "", nil); err != nil {
			return err
		}
	}
	all, err := discover(ctx, client, o.Subresources, cmdutil.Notifier(o.ErrOut))
	if err != nil {
		return err
	}
	var resources []rbac.Resource
	for _, r := range all {
		if r.Namespaced != o.ClusterScope {
			resources = append(resources, r)
		}
	}
	var namespaces []string
	switch {
	case o.ClusterScope:
		namespaces = []string{""}
	case o.AllNamespaces:
		if namespaces, err = client.Namespaces(ctx); err != nil {
			return err
		}
	default:
		namespaces = []string{o.namespace}
	}
	var out []*rbac.Matrix
	reviews := 0 // the requests sent so far, against --max-reviews
	for _, ns := range namespaces {
		opts := rbac.AccessOptions{Namespace: ns, Verbs: o.Verbs, ForceSSAR: o.Method == rbac.FromAccessReview || o.ClusterScope,
			MaxReviews: o.reviewsLeft(reviews)}
		if o.global.IsTerminal(o.ErrOut) {
			opts.Progress = func(done, total int) {
				if total < 20 {
					return
				}
				fmt.Fprintf(o.ErrOut, "\r\033[Kchecking %s: %d/%d access reviews", nsLabel(ns), done, total)
				if done == total {
					fmt.Fprint(o.ErrOut, "\r\033[K")
				}
			}
		}
		m, err := client.Access(ctx, resources, opts)
		if errors.Is(err, rbac.ErrTooManyReviews) {
			return fmt.Errorf("%w; raise --max-reviews (0: no limit), or ask about fewer namespaces or verbs", err)
		}
		if err != nil {
			return err
		}
		reviews += m.Requests
		if other != nil {
			opts.MaxReviews = o.reviewsLeft(reviews)
			m2, err := other.Access(ctx, resources, opts)
			if err != nil {
				return fmt.Errorf("as %s: %w", o.DiffAs, err)
			}
			reviews += m2.Requests
			m = rbac.Diff(m, m2)
		}
		out = append(out, m)
	}
	var v any = out
	if len(out) == 1 {
		v = out[0]
	}
	return o.Output.Print(o.Out, v, func(w io.Writer) {
		for i, m := range out {
			if i > 0 {
				fmt.Fprintln(w)
			}
			printMatrix(w, m)
		}
	})
}

func printMatrix(w io.Writer, m *rbac.Matrix) {
	scope := "cluster scope"
	if m.Namespace != "" {
		scope = "namespace " + m.Namespace
	}
	fmt.Fprintf(w, "# %s (%d API requests after discovery)\n", scope, m.Requests)
	commands := slices.Sorted(maps.Keys(m.Streaming))
	for _, c := range commands {
		fmt.Fprintf(w, "# %s: %s (get and create on its subresource, since Kubernetes 1.35)\n", c, map[bool]string{true: "works", false: "fails"}[m.Streaming[c]])
	}
	if m.Incomplete {
		fmt.Fprintln(w, "# the rules review is incomplete (an authorizer besides RBAC, such as a webhook): every cell asked with an access review (*); ! marks an answer that authorizer gave against RBAC's rules")
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "NAME\t%s\n", strings.ToUpper(strings.Join(m.Verbs, "\t")))
	for _, r := range m.Rows {
		cells := make([]string, len(m.Verbs))
		for i, v := range m.Verbs {
			c := r.Cells[v]
			switch {
			case c.Source == rbac.NotApplicable:
				cells[i] = "·"
			case c.Allowed:
				cells[i] = "✔"
			case c.Partial:
				cells[i] = "~"
			default:
				cells[i] = "✗"
			}
			if c.Source == rbac.FromAccessReview {
				cells[i] += "*"
			}
			if c.DecidedElsewhere {
				cells[i] += "!"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\n", logging.Printable(r.Resource), strings.Join(cells, "\t"))
	}
	_ = tw.Flush()
}

func nsLabel(ns string) string {
	if ns == "" {
		return "cluster scope"
	}
	return "namespace " + ns
}

// reviewsLeft is --max-reviews less the requests sent: rbac.AccessOptions'
// MaxReviews (0: no limit; negative when spent, so the next is refused).
func (o *AccessOptions) reviewsLeft(sent int) int {
	if o.MaxReviews <= 0 {
		return 0
	}
	if left := o.MaxReviews - sent; left > 0 {
		return left
	}
	return -1
}
