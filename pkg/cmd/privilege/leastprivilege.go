package privilege

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/auditlog"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/inspect"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbac"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbaceval"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rolegen"
	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
)

// LeastPrivilegeOptions is the least-privilege command.
type LeastPrivilegeOptions struct {
	Kube   *cmdutil.KubeFlags
	Output *cmdutil.OutputFlags
	// From are recordings (record -o); FromAudit kube-apiserver's audit
	// logs, read for User's requests.
	From, FromAudit []string
	User            string
	// RecordingKeys are the keys record printed: --from reads only what
	// one of them sealed.
	RecordingKeys []string
	// Name names the generated objects; Subject is who they are bound to.
	Name, Subject string
	MaxNames      int
	// Held compares with what the kubeconfig's identity (--as) holds.
	Held bool
	// SudoRole proposes the role of a sudo request instead (--sudo-role):
	// one namespace's Role, bound to the group a grant of it carries.
	SudoRole string

	reqs    []auditlog.Request
	skipped []string
	keys    []ed25519.PublicKey
	subject *rbacv1.Subject
	client  inspect.AccessClient
	genericiooptions.IOStreams
	global *cmdutil.GlobalOptions
}

// NewCmdLeastPrivilege builds least-privilege.
func NewCmdLeastPrivilege(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &LeastPrivilegeOptions{IOStreams: streams, global: g}
	cmd := &cobra.Command{
		Use:   "least-privilege --from FILE | --from-audit FILE --audit-user NAME",
		Short: "The Roles that allow exactly what a recording (or the audit log) shows an identity doing",
		Long: `least-privilege reads what an identity did (recordings of "kubectl impersonate
record", or with --from-audit and --audit-user kube-apiserver's audit log or the
impersonating proxy's, which cannot tell an admission's 403 from the
authorizer's and so grants neither) and prints
the least privilege that serves it, as YAML that kubectl apply takes: a Role
for each namespace used and a ClusterRole for what was used at cluster scope
(cluster-scoped resources, every namespace at once, non-resource URLs), with
their bindings for --subject.

The rules hold the exact verbs and resources used: watch only where watched,
subresources apart, resourceNames where at most --max-names objects were
named and never a list of them all. Only what the cluster was seen to allow
is granted (the authorizer's decision in an audit event, or an answer only a
handler past it gives): what it refused, what it never decided (an
impersonation refused before the authorizer, a 429, a 5xx, no answer) and
discovery (every user's already) are counted, never granted; a line no API
server could have authorized is skipped and counted. A WebSocket exec,
attach or port-forward gets get and create on its subresource, which
Kubernetes 1.35 and later ask. Rules that are risks (escalation paths,
credentials, workloads, nodes, the control plane) are called out in the
comments above the YAML.

With --held (the default), it also counts what the kubeconfig's identity
(--as to choose another) holds in the namespaces used, against what the use
needed: "holds 240 cells, used 7".

With --sudo-role NAME it proposes the role of a sudo request instead: the Role
NAME of the one namespace used (-n to choose), bound to the group a grant of
it carries (sudo:NAMESPACE:NAME), and the request that asks for it; what was
used at cluster scope or elsewhere, and roles or bindings written (admission
refuses them under a grant), are listed, not granted.`,
		Example: `  kubectl impersonate least-privilege --from ci.jsonl --subject ServiceAccount:ci:deployer
  kubectl impersonate least-privilege --from-audit /var/log/kube-apiserver/audit.log \
    --audit-user system:serviceaccount:ci:deployer --name deployer | kubectl apply -f -
  # The role of a sudo request, sized by what a hotfix run did
  kubectl impersonate least-privilege --from hotfix.jsonl --sudo-role hotfix -n payments`,
		Args: cobra.NoArgs,
		RunE: g.RunE(o),
	}
	o.Kube = cmdutil.NewKubeFlags(cmd.Flags(), g.Env)
	o.Kube.RegisterCompletions(cmd)
	o.Output = cmdutil.NewOutputFlags(cmd.Flags(), "yaml with comments")
	f := cmd.Flags()
	f.StringArrayVar(&o.From, "from", nil, "A recording of kubectl impersonate record (repeatable)")
	f.StringArrayVar(&o.FromAudit, "from-audit", nil, "A kube-apiserver audit log (--audit-log-path, format json), "+
		"or the impersonating proxy's --audit-log (repeatable): the requests of --audit-user")
	f.StringArrayVar(&o.RecordingKeys, "recording-key", nil, "The key record printed (ed25519:...; repeatable): "+
		"--from reads only what it sealed (without one, any seal of record's, and says which keys)")
	f.StringVar(&o.User, "audit-user", "", "Whose requests --from-audit reads: the user kube-apiserver authorized "+
		"(system:serviceaccount:NS:NAME for a service account)")
	f.StringVar(&o.Name, "name", rolegen.DefaultName, "The name of the generated Roles, ClusterRole and bindings")
	f.StringVar(&o.Subject, "subject", "", "Who the bindings bind: User:NAME, Group:NAME or ServiceAccount:NS:NAME "+
		"(default: --audit-user with --from-audit; none: no bindings)")
	f.IntVar(&o.MaxNames, "max-names", rolegen.DefaultMaxNames, "A rule names the objects used when they are at "+
		"most this many; more, and it grants every object (said above the YAML); 0 names them all")
	f.BoolVar(&o.Held, "held", true, "Count what the kubeconfig's identity (--as) holds in the namespaces used")
	f.StringVar(&o.SudoRole, "sudo-role", "", "Propose the role of a sudo request: a Role of this name in the "+
		"namespace used (-n to choose), bound to the group a grant of it carries")
	return cmd
}

// ValidateFlags checks the flags before anything is read.
func (o *LeastPrivilegeOptions) ValidateFlags() error {
	switch {
	case len(o.From) == 0 && len(o.FromAudit) == 0:
		return errors.New("nothing to read: give --from FILE (a recording of kubectl impersonate record) or " +
			"--from-audit FILE --audit-user NAME")
	case len(o.FromAudit) > 0 && o.User == "":
		return errors.New("--from-audit needs --audit-user: whose requests to read from the audit log")
	case o.MaxNames < 0:
		return fmt.Errorf("--max-names %d: give 0 or more", o.MaxNames)
	case o.Name == "":
		return errors.New("--name is empty: give the generated objects' name")
	}
	if err := o.validateSudoRole(); err != nil {
		return err
	}
	return o.Output.Validate()
}

// Complete parses the subject, reads the files and, with --held, builds
// the identity's client.
func (o *LeastPrivilegeOptions) Complete(_ context.Context, _ []string) error {
	subject := o.Subject
	if subject == "" && o.User != "" {
		subject = "User:" + o.User
		if ns, name, ok := rbaceval.SplitServiceAccount(o.User); ok {
			subject = "ServiceAccount:" + ns + ":" + name
		}
	}
	if subject != "" {
		s, err := ParseSubject(subject)
		if err != nil {
			return err
		}
		o.subject = &s
	}
	for _, k := range o.RecordingKeys {
		key, err := auditlog.ParseKey(k)
		if err != nil {
			return fmt.Errorf("--recording-key: %w", err)
		}
		o.keys = append(o.keys, key)
	}
	for _, f := range o.From {
		if err := o.readLog(f, auditlog.ReadOptions{Sealed: true, Keys: o.keys}); err != nil {
			return err
		}
	}
	for _, f := range o.FromAudit {
		if err := o.readLog(f, auditlog.ReadOptions{User: o.User}); err != nil {
			return err
		}
	}
	if o.Held {
		ic, err := o.Kube.IdentityClients()
		if err != nil {
			return err
		}
		o.client = ic.Target
	}
	return nil
}

// readLog reads one log's requests, and says what it skipped.
func (o *LeastPrivilegeOptions) readLog(path string, ro auditlog.ReadOptions) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("reading the requests: %w", err)
	}
	defer f.Close()
	l, err := auditlog.Read(f, ro)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	o.reqs = append(o.reqs, l.Requests...)
	if l.Unsealed > 0 {
		keyGiven := map[bool]string{true: " with the --recording-key given"}[len(o.keys) > 0]
		o.skipped = append(o.skipped, fmt.Sprintf("%s of %s not read: not sealed by record%s (written by "+
			"someone else, or a recording cut short): %s", plural(l.Unsealed, "line"), path, keyGiven,
			strings.Join(l.Skips, "; ")))
	}
	if len(o.keys) == 0 && ro.Sealed {
		for _, k := range slices.Sorted(maps.Keys(l.SealKeys)) {
			o.skipped = append(o.skipped, fmt.Sprintf("%s: %d lines sealed by %s, not checked against the key "+
				"record printed (--recording-key)", path, l.SealKeys[k], k))
		}
	}
	if l.Skipped > 0 {
		o.skipped = append(o.skipped, fmt.Sprintf("%s in %s (no request a server could have authorized: not "+
			"granted): %s", plural(l.Skipped, "line")+" skipped", path, strings.Join(l.Skips, "; ")))
	}
	return nil
}

// ParseSubject reads User:NAME, Group:NAME or ServiceAccount:NS:NAME.
func ParseSubject(s string) (rbacv1.Subject, error) {
	kind, rest, _ := strings.Cut(s, ":")
	switch {
	case rest == "":
	case kind == rbacv1.UserKind || kind == rbacv1.GroupKind:
		return rbacv1.Subject{Kind: kind, APIGroup: rbacv1.GroupName, Name: rest}, nil
	case kind == rbacv1.ServiceAccountKind:
		if ns, name, ok := strings.Cut(rest, ":"); ok && ns != "" && name != "" {
			return rbacv1.Subject{Kind: kind, Namespace: ns, Name: name}, nil
		}
	}
	return rbacv1.Subject{}, fmt.Errorf("--subject %q: give User:NAME, Group:NAME or ServiceAccount:NAMESPACE:NAME", s)
}

// Result is least-privilege's answer: the policy, and the identity's held
// cells when counted.
type Result struct {
	rolegen.Policy
	// Held counts the cells the identity holds in the namespaces used
	// (HeldIn), -1 when not counted.
	Held   int      `json:"held"`
	HeldIn []string `json:"heldIn,omitempty"`
	// Skipped says, a file each, the lines read as no request.
	Skipped []string `json:"skipped,omitempty"`
	// Sudo is --sudo-role's proposal.
	Sudo *SudoProposal `json:"sudo,omitempty"`
}

// Run generates the policy, counts what is held, and prints.
func (o *LeastPrivilegeOptions) Run(ctx context.Context) error {
	name := o.Name
	if o.SudoRole != "" {
		name = o.SudoRole
	}
	res := Result{Policy: rolegen.Generate(o.reqs, rolegen.PolicyOptions{Name: name, Subject: o.subject,
		MaxNames: o.MaxNames}), Held: -1, Skipped: o.skipped}
	if o.SudoRole != "" {
		if err := proposeSudoRole(&res, o.SudoRole, o.Kube.NamespaceFlag()); err != nil {
			return err
		}
	}
	if o.client != nil {
		if err := o.held(ctx, &res); err != nil {
			logging.Noticef(o.ErrOut, "least-privilege: not counting what is held (--held=false "+
				"to skip): %s\n", logging.OneLine(err.Error(), 300))
		}
	}
	if o.Output.Format == "json" || o.Output.Format == "yaml" {
		fmt.Fprint(o.ErrOut, summary(res, logging.Prefix+"least-privilege: "))
		return printList(o.Out, o.Output.Format, objects(res.Policy))
	}
	if !o.Output.Human() {
		return o.Output.Print(o.Out, res, nil)
	}
	fmt.Fprint(o.Out, summary(res, "# "))
	return printYAML(o.Out, objects(res.Policy))
}

// held counts the cells the identity holds in the namespaces the policy
// uses, as access answers.
func (o *LeastPrivilegeOptions) held(ctx context.Context, res *Result) error {
	namespaces := map[string]bool{}
	for _, c := range res.Used {
		if c.Namespace != "" {
			namespaces[c.Namespace] = true
		}
	}
	if len(namespaces) == 0 {
		return nil
	}
	resources, err := inspect.Resources(ctx, o.client, nil, true, false, cmdutil.Notifier(o.ErrOut))
	if err != nil {
		return err
	}
	res.HeldIn = slices.Sorted(maps.Keys(namespaces))
	held := 0
	err = inspect.Matrices(ctx, inspect.MatrixRequest{Client: o.client, Resources: resources,
		Namespaces: res.HeldIn, Verbs: rbac.DefaultVerbs}, func(_ int, m *rbac.Matrix) {
		for _, r := range m.Rows {
			for _, c := range r.Cells {
				if c.Held() {
					held++
				}
			}
		}
	})
	if err != nil {
		return err
	}
	res.Held = held
	return nil
}

// summary is the comments above the YAML: what was read, held against
// used, the escalations.
func summary(res Result, prefix string) string {
	var b strings.Builder
	used := len(res.Used)
	fmt.Fprintf(&b, "%sleast privilege for %s used (verb, resource, namespace); not granted: %d refused by the "+
		"cluster, %d undecided (no answer, or one given before its authorizer decided), %d discovery (every user's)",
		prefix, plural(used, "cell"), len(res.Refused), len(res.Undecided), res.Discovery)
	if len(res.Wildcards) > 0 {
		fmt.Fprintf(&b, ", %d naming a wildcard (*)", len(res.Wildcards))
	}
	b.WriteString("\n")
	for _, sk := range res.Skipped {
		fmt.Fprintf(&b, "%s%s\n", prefix, logging.OneLine(sk, 600))
	}
	if res.Held >= 0 && len(res.HeldIn) > 0 {
		inNS := 0
		for _, c := range res.Used {
			if c.Namespace != "" {
				inNS++
			}
		}
		fmt.Fprintf(&b, "%sholds %s in %s, used %d\n", prefix, plural(res.Held, "cell"),
			logging.OneLine(strings.Join(res.HeldIn, ", "), 300), inNS)
	}
	for _, c := range res.Widened {
		fmt.Fprintf(&b, "%swidened to every name (over --max-names): %s\n", prefix, logging.OneLine(c.String(), 200))
	}
	for _, e := range res.Escalations {
		c := rolegen.Cell{Namespace: e.Namespace, Verb: e.Verb, APIGroup: e.APIGroup, Resource: e.Resource}
		fmt.Fprintf(&b, "%srisk: %s: %s\n", prefix, logging.OneLine(c.String(), 200), logging.OneLine(e.Risk.String(),
			400))
	}
	if res.ClusterRoleBinding == nil && len(res.RoleBindings) == 0 && (res.ClusterRole != nil || len(res.Roles) > 0) {
		fmt.Fprintf(&b, "%sno bindings: give --subject to bind the roles\n", prefix)
	}
	if res.Sudo != nil {
		b.WriteString(sudoSummary(res.Sudo, prefix))
	}
	return b.String()
}

// plural is "N nouns", or "1 noun".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// objects are the policy's objects in apply order: roles, then bindings.
func objects(p rolegen.Policy) []runtime.Object {
	var out []runtime.Object
	if p.ClusterRole != nil {
		out = append(out, p.ClusterRole)
	}
	for i := range p.Roles {
		out = append(out, &p.Roles[i])
	}
	if p.ClusterRoleBinding != nil {
		out = append(out, p.ClusterRoleBinding)
	}
	for i := range p.RoleBindings {
		out = append(out, &p.RoleBindings[i])
	}
	return out
}

// printYAML writes objs as YAML documents, "---" between them.
func printYAML(w io.Writer, objs []runtime.Object) error {
	p := &printers.YAMLPrinter{}
	for _, obj := range objs {
		if err := p.PrintObj(obj, w); err != nil {
			return fmt.Errorf("encoding the output: %w", err)
		}
	}
	return nil
}

// printList writes objs as a v1 List (kubectl apply takes it), as kubectl
// get -o json|yaml prints one.
func printList(w io.Writer, format string, objs []runtime.Object) error {
	list := &metav1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}, Items: []runtime.RawExtension{}}
	for _, obj := range objs {
		b, err := json.Marshal(obj)
		if err != nil {
			return fmt.Errorf("encoding the output: %w", err)
		}
		list.Items = append(list.Items, runtime.RawExtension{Raw: b})
	}
	var p printers.ResourcePrinter = &printers.YAMLPrinter{}
	if format == "json" {
		p = &printers.JSONPrinter{}
	}
	if err := p.PrintObj(list, w); err != nil {
		return fmt.Errorf("encoding the output: %w", err)
	}
	return nil
}
