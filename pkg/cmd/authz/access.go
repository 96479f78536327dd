package authz

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/bits"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/inspect"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbac"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbaceval"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbacgraph"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/resource"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/risk"
	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/settings"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
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
	// Escalation adds the escalation paths (--escalation).
	Escalation bool
	// Resources narrows the rows to these resources (as typed: short
	// names, kinds, resource.group), resolved through discovery.
	Resources []string
	// RBACObjects: with -A, evaluate the RBAC objects read once instead of
	// one rules review per namespace, where that gives the server's answer.
	RBACObjects bool
	// Graph draws the identity's RBAC instead (rbacgraph).
	Graph bool
	// client, caller (the kubeconfig's own identity, --as aside: it lists
	// the namespaces for -A), impersonate (a client acting as another
	// identity), namespace and resources (the rows, resolved through
	// discovery) are Complete's.
	client      inspect.AccessClient
	caller      callerClient
	impersonate func(user string, groups []string, uid string, extra map[string][]string) (inspect.AccessClient, error)
	namespace   string
	resources   []resource.Resource
	// claims reads the cached token's claims for --graph (nil: none).
	claims func(ctx context.Context) map[string][]string
	// grant is the sudo grant the identity (grantUser) is asked under
	// (its impersonation names it: kubectl impersonate sudo's
	// kubeconfigs), read with grants, the caller's own rights; "" when none.
	grant, grantUser string
	grants           elevation.Client
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
With -A, when you may read the RBAC objects and one rules review shows that
RBAC is the only authorizer and that the objects give the server's rules, the
objects are read once and evaluated for every namespace as kube-apiserver's
RBAC does (--rbac-objects): about 9 requests for any number of namespaces
instead of one per namespace.
In the table, ✔ is allowed, ✗ denied, ~ allowed for some resourceNames only,
"·" means the resource has no such verb, and * marks an answer from a SelfSubjectAccessReview.

Below the matrix come the escalation paths you hold (--escalation, on by
default): impersonate on users, groups, serviceaccounts, uids and userextras
(kubectl --as), bind and escalate on roles and clusterroles, and constrained
impersonation (Kubernetes 1.35+, KEP-5284): impersonate:user-info,
impersonate:serviceaccount, impersonate:arbitrary-node and
impersonate:associated-node on the identities of authentication.k8s.io, each
asked as kube-apiserver asks it (the cluster-scoped ones with one access review
each where a rule might grant it, once per run). For each constrained mode you hold, a second matrix shows
the impersonate-on:<mode>:<verb> cells: what you may do as an identity you
impersonate that way. -o json has every check under "escalation" and
"impersonateOn".

With -A the table is a summary: the cells allowed in every namespace (the
baseline), then per namespace how many cells it allows and which beyond the
baseline; --resource R makes it one row per namespace and resource; -o wide
prints every namespace's matrix, -o json every cell.`,
		Example: `  kubectl impersonate access -n team-a
  kubectl impersonate access -n team-a --as=bob@example.com --verb=get,list,create
  # Where, across the cluster, may bob read secrets?
  kubectl impersonate access -A --as=bob@example.com --resource=secrets --verb=get,list
  kubectl impersonate access --cluster-scope -o json`,
		Args: cobra.NoArgs,
		RunE: g.RunE(o),
	}
	o.Kube = cmdutil.NewKubeFlags(cmd.Flags(), g.Env)
	o.Kube.RegisterCompletions(cmd)
	defer cmdutil.RegisterListCompletions(cmd, "resource", o.Kube.CompleteResources)
	f := cmd.Flags()
	f.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "One matrix per namespace")
	f.BoolVar(&o.ClusterScope, "cluster-scope", false, "The cluster-scoped resources instead of a namespace's")
	f.StringSliceVar(&o.Verbs, "verb", rbac.DefaultVerbs, "The verb columns (repeatable, or comma-separated)")
	f.IntVar(&o.MaxReviews, "max-reviews", 2000, "At most this many access reviews in all (an authorizer besides "+
		"RBAC makes every cell one); more is refused before any is sent (0: no limit)")
	settings.AliasFlag(f, "verbs", "verb", streams.ErrOut)
	f.BoolVar(&o.Escalation, "escalation", true, "Also the escalation paths: impersonate, bind, escalate and "+
		"constrained impersonation (impersonate:<mode>, impersonate-on:<mode>:<verb>)")
	f.BoolVar(&o.RBACObjects, "rbac-objects", true, "With -A: read the RBAC objects once (4 lists, with your own "+
		"rights) and evaluate them for every namespace, when you may read them and a rules review shows RBAC is the "+
		"only authorizer and gives the same rules; false: one rules review per namespace")
	f.StringSliceVar(&o.Resources, "resource", nil, "Only these resources' rows (repeatable, or comma-separated; "+
		"short names and kinds as kubectl takes them); with -A the table is one row per namespace and resource")
	f.BoolVar(&o.Subresources, "subresources", false, "Include subresources (pods/log, deployments/scale, ...)")
	f.StringVar((*string)(&o.Method), "method", string(rbac.FromRules), "rules (a rules review, then access reviews "+
		"where needed) or ssar (one access review per cell)")
	o.Output = cmdutil.NewOutputFlags(f, "a table; with -A a summary per namespace",
		append([]string{"wide"}, rbacgraph.Formats...)...)
	f.BoolVar(&o.Graph, "graph", false, "Draw the identity, its groups, the bindings that apply to them (of the "+
		"namespace, -A every namespace's, --cluster-scope none), their roles and what they grant, escalation paths "+
		"in red: -o dot (the default), svg, html (a page that pans and zooms offline) or json")
	f.BoolVar(&o.TokenIdentity, "token-identity", false, "Impersonate exactly the username, groups, UID and extra "+
		"the API server reports for the current credentials (what --as alone loses; needs the impersonate permission)")
	f.StringVar(&o.DiffAs, "diff-as", "", "Also build the matrix as this user (impersonation) and show only the "+
		"cells where the two differ")
	f.StringSliceVar(&o.DiffAsGroups, "diff-as-group", nil, "Groups for --diff-as (repeatable)")
	return cmd
}

// Complete builds the clients, reads the namespace and resolves the rows'
// resources (resolveArgs).
func (o *AccessOptions) Complete(ctx context.Context, args []string) error {
	ic, err := o.Kube.IdentityClients()
	if err != nil {
		return err
	}
	// -A lists the namespaces with the caller's own rights.
	o.client, o.caller = ic.Target, ic.Caller
	o.grant, o.grantUser, o.grants = ic.Grant, ic.GrantUser, ic.Caller
	o.impersonate = func(
		user string, groups []string, uid string, extra map[string][]string,
	) (inspect.AccessClient, error) {
		return ic.Impersonate(user, groups, uid, extra)
	}
	if !o.AllNamespaces && !o.ClusterScope {
		if o.namespace, _, err = o.Kube.ClientConfig().Namespace(); err != nil {
			return err
		}
	}
	if o.Graph {
		if !o.Kube.Impersonates() {
			o.claims = func(ctx context.Context) map[string][]string { return o.Kube.TokenClaims(ctx) }
		}
		return nil // the graph needs no discovery
	}
	return o.resolveArgs(ctx)
}

// resolveArgs resolves the rows' resources through discovery, as kubectl
// resolves its arguments: the scope's, or --resource's, as kubectl takes it.
func (o *AccessOptions) resolveArgs(ctx context.Context) (err error) {
	o.resources, err = inspect.Resources(
		ctx, o.client, o.Resources, o.Subresources, o.ClusterScope, cmdutil.Notifier(o.ErrOut))
	return err
}

// ValidateFlags checks the flags, before anything is read.
func (o *AccessOptions) ValidateFlags() error {
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
	if err := rbacgraph.CheckFormat(o.Graph, o.Output.Format); err != nil {
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

// Run resolves who is asked about what and where, builds the matrices
// (access's use case) and prints each as it comes: -o wide at once, the
// -A summary folded namespace by namespace, the rest whole at the end.
func (o *AccessOptions) Run(ctx context.Context) error {
	if o.Graph {
		return o.graph(ctx)
	}
	q, err := o.resolve(ctx)
	if err != nil {
		return err
	}
	terminal := o.global.IsTerminal(o.ErrOut)
	if terminal && len(q.Namespaces) == 1 {
		q.ReviewProgress = func(ns string, done, total int) {
			if total >= 20 {
				progressLine(o.ErrOut, done, total, "checking %s: %d/%d access reviews", nsLabel(ns), done, total)
			}
		}
	}
	note := o.sudoNote(ctx, q.Namespaces)
	sink := o.sink()
	emitted := 0
	err = inspect.Matrices(ctx, *q, func(i int, m *rbac.Matrix) {
		if note != nil && m.Namespace == note.Namespace {
			m.Sudo = &note.Note
		}
		sink.add(m)
		emitted++
		if terminal && len(q.Namespaces) > 1 {
			progressLine(o.ErrOut, emitted, len(q.Namespaces), "checking namespaces: %d/%d", emitted, len(q.Namespaces))
		}
	})
	if err != nil {
		if terminal {
			logging.StatusLine(o.ErrOut, "")
		}
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted with %d of %d namespaces answered: %w", emitted, len(q.Namespaces),
				ctx.Err())
		}
		return err
	}
	return sink.end()
}

// sudoNote is the grant the run is asked under (inspect.GrantUnder), nil
// when none applies; one that cannot be read is said on stderr.
func (o *AccessOptions) sudoNote(ctx context.Context, namespaces []string) *inspect.UnderGrant {
	note, err := inspect.GrantUnder(ctx, o.grants, o.grant, o.grantUser, namespaces, time.Now())
	if err != nil {
		cmdutil.Notifier(o.ErrOut)("the matrix is asked under sudo grant " + logging.Printable(o.grant) +
			", which could not be read (" + logging.OneLine(err.Error(), 300) + "): it says what is allowed now, " +
			"not until when")
	}
	return note
}

// graph draws the identity's RBAC: who it is (SelfSubjectReview, --as
// included) and the RBAC objects, read with your own rights.
func (o *AccessOptions) graph(ctx context.Context) error {
	ui, _, err := o.client.WhoAmI(ctx)
	if err != nil {
		return err
	}
	scope := rbaceval.ScopeOf(o.namespace, o.ClusterScope)
	r, err := o.caller.ReadRBAC(ctx, scope.Namespace)
	if err != nil {
		return fmt.Errorf("--graph draws the RBAC objects, read with your own rights: %w", err)
	}
	g := rbacgraph.ForIdentity(r, ui.Username, ui.Groups, scope)
	if o.claims != nil {
		g.Claims(o.claims(ctx), ui.Username, ui.Groups)
	}
	return g.Write(o.Out, o.Output.Format)
}

// resolve is the request of the run: the identity asked about
// (--token-identity: exactly the one the server names; --diff-as's too),
// the resources (Complete's), the namespaces (-A lists them
// with the caller's own rights) and, with -A, the RBAC objects evaluated
// once where they give the server's answer.
func (o *AccessOptions) resolve(ctx context.Context) (*inspect.MatrixRequest, error) {
	q := &inspect.MatrixRequest{Client: o.client, Verbs: o.Verbs,
		ForceSSAR:  o.Method == rbac.FromAccessReview || o.ClusterScope,
		Escalation: o.Escalation, MaxReviews: o.MaxReviews, OtherName: o.DiffAs}
	var err error
	if o.TokenIdentity {
		ui, _, err := o.client.WhoAmI(ctx)
		if err != nil {
			return nil, err
		}
		if q.Client, err = o.impersonate(ui.Username, ui.Groups, ui.UID, inspect.ExtraOf(ui.Extra)); err != nil {
			return nil, err
		}
	}
	if o.DiffAs != "" {
		if q.Other, err = o.impersonate(o.DiffAs, o.DiffAsGroups, "", nil); err != nil {
			return nil, err
		}
	}
	q.Resources = o.resources
	var caller callerClient = q.Client
	if o.caller != nil {
		caller = o.caller
	}
	switch {
	case o.ClusterScope:
		q.Namespaces = []string{""}
	case o.AllNamespaces:
		if q.Namespaces, err = caller.Namespaces(ctx); err != nil {
			return nil, err
		}
	default:
		q.Namespaces = []string{o.namespace}
	}
	if o.AllNamespaces && o.RBACObjects && o.Method == rbac.FromRules && len(q.Namespaces) > 0 {
		ids := []inspect.RulesClient{q.Client}
		if q.Other != nil {
			ids = append(ids, q.Other)
		}
		if found := inspect.LocalRules(ctx,
			inspect.Say{Warn: cmdutil.Notifier(o.ErrOut), Verbose: o.global.Verbosity >= 1}, caller, q.Namespaces[0],
			ids...); found != nil {
			q.Local = found[0]
			if q.Other != nil {
				q.OtherLocal = found[1]
			}
		}
	}
	return q, nil
}

// matrixSink takes the matrices in namespace order and prints them.
type matrixSink interface {
	add(m *rbac.Matrix)
	end() error
}

// sink is how the run's -o prints: -o wide with -A as each comes, the -A
// summary folded, the rest kept and printed at the end.
func (o *AccessOptions) sink() matrixSink {
	diff := o.DiffAs != ""
	switch {
	case o.AllNamespaces && o.Output.Format == "wide":
		return &streamSink{w: o.Out, diff: diff}
	case o.AllNamespaces && o.Output.Human() && len(o.Resources) == 0 && !diff:
		return &summarySink{w: o.Out}
	}
	return &keepSink{print: func(out []*rbac.Matrix) error {
		var v any = out
		if len(out) == 1 {
			v = out[0]
		}
		return o.Output.Print(o.Out, v, func(w io.Writer) {
			if o.AllNamespaces && len(o.Resources) > 0 && o.Output.Format != "wide" {
				printByNamespace(w, out)
				return
			}
			for i, m := range out {
				if i > 0 {
					fmt.Fprintln(w)
				}
				printMatrix(w, m, diff)
			}
		})
	}}
}

// streamSink prints each matrix as it comes (access -A -o wide).
type streamSink struct {
	w       io.Writer
	diff    bool
	printed int
}

func (s *streamSink) add(m *rbac.Matrix) {
	if s.printed > 0 {
		fmt.Fprintln(s.w)
	}
	printMatrix(s.w, m, s.diff)
	s.printed++
}

func (s *streamSink) end() error { return nil }

// keepSink keeps every matrix and prints them at the end (-o json|yaml,
// one namespace, --resource and --diff-as with -A).
type keepSink struct {
	out   []*rbac.Matrix
	print func([]*rbac.Matrix) error
}

func (s *keepSink) add(m *rbac.Matrix) { s.out = append(s.out, m) }
func (s *keepSink) end() error         { return s.print(s.out) }

// printByNamespace is access -A --resource: one line per namespace and
// resource, the verbs as columns.
func printByNamespace(w io.Writer, out []*rbac.Matrix) {
	if len(out) == 0 {
		return
	}
	verbs := out[0].Verbs
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "NAMESPACE\tRESOURCE\t%s\n", strings.ToUpper(strings.Join(verbs, "\t")))
	for _, m := range out {
		for _, r := range m.Rows {
			cells := make([]string, len(verbs))
			for i, v := range verbs {
				cells[i] = cellMark(r.Cells[v])
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", logging.Printable(m.Namespace), logging.Printable(r.Resource),
				strings.Join(cells, "\t"))
		}
	}
	_ = tw.Flush()
}

// summarySink is access -A's table: the cells allowed in every namespace
// (the baseline, what ClusterRoleBindings and the like give), then one
// line per namespace: how many cells it allows and those beyond the
// baseline. -o wide prints every matrix, -o json every cell. Each matrix
// is folded into a bit per cell as it comes: what the run keeps grows
// with namespaces × cells / 8 bytes, not with the matrices.
type summarySink struct {
	w     io.Writer
	verbs []string
	// cells indexes "resource\x00verb" (the first matrix's rows, in order).
	cells []string
	index map[string]int
	rows  []summaryRow
	esc   *rbac.Matrix
	seen  map[string]bool
}

// summaryRow is one namespace: its held cells, a bit each.
type summaryRow struct {
	namespace  string
	held       []uint64
	incomplete bool
}

func (s *summarySink) add(m *rbac.Matrix) {
	if s.index == nil {
		s.verbs, s.index, s.seen = m.Verbs, map[string]int{}, map[string]bool{}
	}
	row := summaryRow{namespace: m.Namespace, incomplete: m.Incomplete, held: make([]uint64, (len(s.cells)+63)/64)}
	for _, r := range m.Rows {
		for _, v := range m.Verbs {
			if !r.Cells[v].Held() {
				continue
			}
			k := r.Resource + "\x00" + v
			i, ok := s.index[k]
			if !ok {
				i = len(s.cells)
				s.index[k], s.cells = i, append(s.cells, k)
			}
			for len(row.held) <= i/64 {
				row.held = append(row.held, 0)
			}
			row.held[i/64] |= 1 << (i % 64)
		}
	}
	s.rows = append(s.rows, row)
	s.addEscalation(m)
}

// addEscalation gathers the escalation checks of every namespace's matrix
// (the cluster's once) into one matrix for printEscalation.
func (s *summarySink) addEscalation(m *rbac.Matrix) {
	if m.Escalation == nil {
		return
	}
	if s.esc == nil {
		s.esc = &rbac.Matrix{Verbs: m.Verbs, Escalation: []rbac.EscalationCell{}}
	}
	for _, e := range m.Escalation {
		key := strings.Join([]string{e.Verb, e.Resource, e.Subresource, e.Namespace, e.Name}, "\x00")
		if !s.seen[key] {
			s.seen[key] = true
			s.esc.Escalation = append(s.esc.Escalation, e)
		}
	}
}

// cellsOf are the cells of bits set in held and not in minus (nil: none).
func (s *summarySink) cellsOf(held, minus []uint64) map[string]bool {
	out := map[string]bool{}
	for i, k := range s.cells {
		w, bit := i/64, uint64(1)<<(i%64)
		if w < len(held) && held[w]&bit != 0 && (w >= len(minus) || minus[w]&bit == 0) {
			out[k] = true
		}
	}
	return out
}

func (s *summarySink) end() error {
	if len(s.rows) == 0 {
		return nil
	}
	baseline := slices.Clone(s.rows[0].held)
	for _, r := range s.rows[1:] {
		for w := range baseline {
			if w < len(r.held) {
				baseline[w] &= r.held[w]
			} else {
				baseline[w] = 0
			}
		}
	}
	fmt.Fprintf(s.w, "# %d namespaces; cells allowed (some names at least) in every one, the baseline: %s\n",
		len(s.rows), cellList(s.cellsOf(baseline, nil), s.verbs, 0))
	tw := tabwriter.NewWriter(s.w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "NAMESPACE\tCELLS\tBEYOND THE BASELINE\n")
	for _, r := range s.rows {
		n := 0
		for _, w := range r.held {
			n += bits.OnesCount64(w)
		}
		note := ""
		if r.incomplete {
			note = " (rules review incomplete: every cell asked)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s%s\n", logging.Printable(r.namespace), n,
			cellList(s.cellsOf(r.held, baseline), s.verbs, 160), note)
	}
	_ = tw.Flush()
	if s.esc != nil {
		printEscalation(s.w, s.esc, false)
	}
	fmt.Fprintln(s.w, "# -o wide: every namespace's matrix; -o json: every cell; --resource R: one row per namespace "+
		"and resource")
	return nil
}

// cellList is held cells ("resource\x00verb") as "pods(get,list) secrets(get)",
// resources sorted, verbs in column order, at most max bytes (0: all).
func cellList(cells map[string]bool, verbs []string, max int) string {
	if len(cells) == 0 {
		return "-"
	}
	byRes := map[string][]string{}
	for k := range cells {
		res, verb, _ := strings.Cut(k, "\x00")
		byRes[res] = append(byRes[res], verb)
	}
	names := slices.Sorted(maps.Keys(byRes))
	var b strings.Builder
	for i, res := range names {
		vs := byRes[res]
		slices.SortFunc(vs, func(a, c string) int { return slices.Index(verbs, a) - slices.Index(verbs, c) })
		part := logging.Printable(res) + "(" + strings.Join(vs, ",") + ")"
		if max > 0 && b.Len()+len(part) > max {
			fmt.Fprintf(&b, " … (+%d resources)", len(names)-i)
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(part)
	}
	return b.String()
}

// progressLine writes a progress line on w (a terminal) over the last one,
// and erases it once done reaches total.
func progressLine(w io.Writer, done, total int, format string, args ...any) {
	logging.StatusLine(w, fmt.Sprintf(format, args...))
	if done == total {
		logging.StatusLine(w, "")
	}
}

// printMatrix prints m, a --diff-as matrix (only the cells that differ)
// when diff is set.
func printMatrix(w io.Writer, m *rbac.Matrix, diff bool) {
	fmt.Fprintf(w, "# %s (%d API requests after discovery)\n", logging.Printable(nsLabel(m.Namespace)), m.Requests)
	if m.Sudo != nil {
		fmt.Fprintf(w, "# %s\n", logging.Printable(m.Sudo.String()))
	}
	for _, c := range slices.Sorted(maps.Keys(m.Streaming)) {
		fmt.Fprintf(w, "# %s: %s (get and create on its subresource, since Kubernetes 1.35)\n", c,
			map[bool]string{true: "works", false: "fails"}[m.Streaming[c]])
	}
	if m.Incomplete {
		fmt.Fprintln(w, "# the rules review is incomplete (an authorizer besides RBAC, such as a webhook): every "+
			"cell asked with an access review (*); ! marks an answer that authorizer gave against RBAC's rules")
	}
	printRows(w, m.Verbs, m.Rows, false)
	if len(m.Risks) > 0 && !diff { // the cells held that are risks (risk.Of)
		fmt.Fprintf(w, "\n# risks held: %d cells let you gain more than they name\n", len(m.Risks))
		for _, r := range m.Risks {
			fmt.Fprintf(w, "#   %s %s: %s\n", r.Verb, logging.Printable(r.Resource), r.Risk)
		}
	}
	printEscalation(w, m, diff)
}

// printRows is the table of rows (only the rows with a cell allowed, for
// some names at least, when held is set).
func printRows(w io.Writer, verbs []string, rows []rbac.Row, held bool) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "NAME\t%s\n", strings.ToUpper(strings.Join(verbs, "\t")))
	for _, r := range rows {
		if held && !r.Held(verbs) {
			continue
		}
		cells := make([]string, len(verbs))
		for i, v := range verbs {
			cells[i] = cellMark(r.Cells[v])
		}
		fmt.Fprintf(tw, "%s\t%s\n", logging.Printable(r.Resource), strings.Join(cells, "\t"))
	}
	_ = tw.Flush()
}

// cellMark is a cell in a table: ✔, ✗, ~ (some names) or · (no such verb),
// * when an access review answered, ! when it answered against RBAC's rules.
func cellMark(c rbac.Cell) string {
	var s string
	switch {
	case c.Source == rbac.NotApplicable:
		return "·"
	case c.Allowed:
		s = "✔"
	case c.Partial:
		s = "~"
	default:
		s = "✗"
	}
	if c.Source == rbac.FromAccessReview {
		s += "*"
	}
	if c.DecidedElsewhere {
		s += "!"
	}
	return s
}

// printEscalation is the escalation section: the checks held (all of them
// are in -o json), and the impersonate-on matrix of each constrained mode
// held; of a --diff-as matrix (diff), every check and cell that differs.
func printEscalation(w io.Writer, m *rbac.Matrix, diff bool) {
	if m.Escalation == nil && !diff {
		return
	}
	var shown []rbac.EscalationCell
	for _, e := range m.Escalation {
		if diff || e.Held() {
			shown = append(shown, e)
		}
	}
	fmt.Fprintln(w)
	switch {
	case diff && len(shown) == 0 && len(m.ImpersonateOn) == 0:
		fmt.Fprintln(w, "# escalation paths: the same for both identities")
		return
	case diff:
		fmt.Fprintln(w, "# escalation paths where the two identities differ (the --diff-as identity's answer)")
	case len(shown) == 0:
		fmt.Fprintf(w, "# escalation paths: none of the %d checks (impersonate, bind, escalate, constrained "+
			"impersonation) is allowed\n", len(m.Escalation))
		return
	default:
		fmt.Fprintf(w, "# escalation paths: %d of the %d checks allowed (~: for some names only); each acts with "+
			"another identity's permissions or grants more\n", len(shown), len(m.Escalation))
	}
	if len(shown) > 0 {
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "VERB\tRESOURCE\tWHERE\tALLOWED")
		for _, e := range shown {
			where := "cluster"
			if e.Namespace != "" {
				where = "namespace " + e.Namespace
			}
			res := e.Resource
			if e.Subresource != "" {
				res += "/" + e.Subresource
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Verb, res, logging.Printable(where), cellMark(e.Cell))
		}
		_ = tw.Flush()
	}
	for _, mode := range risk.ImpersonationModes {
		rows, ok := m.ImpersonateOn[mode]
		if !ok {
			continue
		}
		fmt.Fprintf(w, "\n# impersonate-on:%s:VERB: what you may do as an identity you impersonate in the %s mode "+
			"(constrained impersonation)\n", mode, mode)
		if !diff && !slices.ContainsFunc(rows, func(r rbac.Row) bool { return r.Held(m.Verbs) }) {
			fmt.Fprintln(w, "nothing in these columns")
			continue
		}
		printRows(w, m.Verbs, rows, !diff)
	}
}

func nsLabel(ns string) string {
	if ns == "" {
		return "cluster scope"
	}
	return "namespace " + ns
}
