package inspect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/kubeapi"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/rbac"
)

// WhyOptions is the why command.
type WhyOptions struct {
	Kube   *cmdutil.KubeFlags
	Output *cmdutil.OutputFlags
	// Quiet prints nothing: the exit code is the answer (kubectl auth can-i -q).
	Quiet  bool
	target rbac.Target
	client whyClient
	genericiooptions.IOStreams
	global *cmdutil.GlobalOptions
}

// WhyResult is what why prints with -o json|yaml.
type WhyResult struct {
	Allowed  bool         `json:"allowed"`
	Denied   bool         `json:"denied,omitempty"`
	Reason   string       `json:"reason,omitempty"`
	Username string       `json:"username"`
	Groups   []string     `json:"groups"`
	Grants   []rbac.Grant `json:"grants,omitempty"`
	RBACNote string       `json:"rbacNote,omitempty"`
	// Streaming is set for pods/exec, pods/attach and pods/portforward: the
	// command works only with both verbs.
	Streaming *StreamingAccess `json:"streaming,omitempty"`
	// Escalation says what the permission asked about lets one do, when it
	// is an escalation path (impersonate, bind, escalate, constrained
	// impersonation).
	Escalation string `json:"escalation,omitempty"`
	// DecidedElsewhere: RBAC's bindings (readable) say otherwise than the
	// answer: another authorizer of the chain (a webhook) decided.
	DecidedElsewhere bool `json:"decidedElsewhere,omitempty"`
	// Impersonation is set for impersonate-on:<mode>:<verb>: the mode's
	// identity check asked too, since the path needs both.
	Impersonation *ImpersonationPath `json:"impersonation,omitempty"`
}

// ImpersonationPath says whether a constrained impersonation path works:
// impersonate-on:<mode>:<verb> on the resource, and impersonate:<mode> on
// the identity (asked for any name: resourceNames may grant some).
type ImpersonationPath struct {
	Mode string `json:"mode"`
	// Identity is the identity check asked: "impersonate:user-info users.authentication.k8s.io",
	// for any name (a grant for some names only says no here), in
	// Namespace for a service account (the request's, assumed).
	Identity        string `json:"identity"`
	Namespace       string `json:"namespace,omitempty"`
	IdentityAllowed bool   `json:"identityAllowed"`
	On              bool   `json:"impersonateOn"`
	Works           bool   `json:"works"`
}

// StreamingAccess says whether kubectl exec, attach or port-forward works:
// since Kubernetes 1.35 they go over WebSockets, which need get as well as
// create on the subresource (SPDY needed create alone).
type StreamingAccess struct {
	Command string `json:"command"`
	Get     bool   `json:"get"`
	Create  bool   `json:"create"`
	Works   bool   `json:"works"`
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
		RunE: cmdutil.RunE(o),
	}
	o.Kube = cmdutil.NewKubeFlags(cmd.Flags())
	o.Kube.RegisterCompletions(cmd)
	o.Output = cmdutil.NewOutputFlags(cmd.Flags(), "text")
	cmd.Flags().BoolVarP(&o.Quiet, "quiet", "q", false, "If true, suppress output and just return the exit code (0: yes, 1: no)")
	return cmd
}

// Complete reads the arguments and the namespace, and builds the client.
func (o *WhyOptions) Complete(args []string) error {
	// -o is checked before the kubeconfig is read, as before any request.
	if err := o.Output.Validate(); err != nil {
		return err
	}
	ns, _, err := o.Kube.ClientConfig().Namespace()
	if err != nil {
		return err
	}
	o.target = parseTarget(args, ns)
	o.client, _, err = o.Kube.Client()
	return err
}

// parseTarget is VERB RESOURCE [NAME] in namespace ns.
func parseTarget(args []string, ns string) rbac.Target {
	name := ""
	if len(args) == 3 {
		name = args[2]
	}
	return rbac.ParseTarget(args[0], args[1], name, ns)
}

// Validate checks -o.
func (o *WhyOptions) Validate() error { return o.Output.Validate() }

// Run asks the authorizer, then reads RBAC when allowed to.
func (o *WhyOptions) Run(ctx context.Context) error {
	client := o.client
	t, err := resolveTarget(ctx, client, o.target, cmdutil.Notifier(o.ErrOut))
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
	st, err := client.Why(ctx, o.target)
	if err != nil {
		return err
	}
	// kubectl auth can-i's exit codes: 0 yes, 1 no; -q prints nothing.
	answer := error(nil)
	if !st.Allowed {
		answer = cmdutil.ExitCode(1)
	}
	if o.Quiet {
		return answer
	}
	ui, _, err := client.WhoAmI(ctx)
	if err != nil {
		return err
	}
	res := WhyResult{Allowed: st.Allowed, Denied: st.Denied, Reason: st.Reason, Username: ui.Username, Groups: ui.Groups}
	if command := rbac.StreamingCommand(o.target.Resource + "/" + o.target.Subresource); command != "" && o.target.Group == "" &&
		(o.target.Verb == "get" || o.target.Verb == "create") {
		// The other verb, as the cluster answers it.
		other := o.target
		other.Verb = map[string]string{"get": "create", "create": "get"}[o.target.Verb]
		ost, err := client.Why(ctx, other)
		if err != nil {
			return err
		}
		sa := &StreamingAccess{Command: command}
		sa.Get, sa.Create = st.Allowed, ost.Allowed
		if o.target.Verb == "create" {
			sa.Get, sa.Create = ost.Allowed, st.Allowed
		}
		sa.Works = sa.Get && sa.Create
		res.Streaming = sa
	}
	res.Escalation = rbac.Escalation(o.target.Verb, o.target.Group, o.target.Resource)
	if mode, _, ok := rbac.ParseImpersonateOn(o.target.Verb); ok && o.target.NonResourceURL == "" {
		check := identityCheck(mode)
		idt := rbac.Target{Verb: check.Verb, Group: check.Group, Resource: check.Resource, Name: check.Name}
		if check.Namespaced {
			idt.Namespace = o.target.Namespace
		}
		ist, err := client.Why(ctx, idt)
		if err != nil {
			return err
		}
		res.Impersonation = &ImpersonationPath{Mode: mode, Identity: check.String(), Namespace: idt.Namespace, IdentityAllowed: ist.Allowed, On: st.Allowed, Works: ist.Allowed && st.Allowed}
	}
	bindings, err := client.ReadRBAC(ctx, readNS)
	var ae *kubeapi.APIError
	switch {
	case errors.As(err, &ae) && ae.Code == 403:
		res.RBACNote = "you may not read RBAC objects here, so only the authorizer's reason is shown"
	case err != nil && ctx.Err() == nil:
		// The decision stands without the bindings behind it.
		res.RBACNote = "could not read RBAC objects (" + logging.OneLine(err.Error(), 200) + "), so only the authorizer's reason is shown"
	case err != nil:
		return err
	default:
		res.Grants = rbac.ForIdentity(bindings.WhoCan(o.target), ui.Username, ui.Groups)
		res.DecidedElsewhere = (len(res.Grants) > 0) != res.Allowed
	}
	if err := o.Output.Print(o.Out, res, func(w io.Writer) {
		verdict := "no"
		if res.Allowed {
			verdict = "yes"
		}
		fmt.Fprintf(w, "%s: may %s %s %s? %s\n", logging.Printable(res.Username), logging.Printable(o.target.Verb), logging.Printable(o.target.ResourceDisplay()), logging.Printable(o.target.Where()), verdict)
		if res.Reason != "" {
			fmt.Fprintf(w, "Reason: %s\n", logging.Printable(res.Reason))
		}
		if res.RBACNote != "" {
			fmt.Fprintln(w, logging.Printable(res.RBACNote))
		}
		switch {
		case res.DecidedElsewhere && res.Allowed:
			fmt.Fprintln(w, "No RBAC binding grants it to you: another authorizer of the chain (such as a webhook) allowed it.")
		case res.DecidedElsewhere:
			fmt.Fprintln(w, "RBAC grants it to you (the bindings below), but another authorizer of the chain (such as a webhook) denied it.")
		}
		if sa := res.Streaming; sa != nil {
			yes := map[bool]string{true: "yes", false: "no"}
			fmt.Fprintf(w, "%s: %s (since Kubernetes 1.35 it needs get and create on %s over WebSockets: get %s, create %s)\n",
				sa.Command, map[bool]string{true: "works", false: "fails"}[sa.Works], o.target.ResourceDisplay(), yes[sa.Get], yes[sa.Create])
		}
		if res.Escalation != "" {
			fmt.Fprintf(w, "This is %s.\n", res.Escalation)
		}
		if ip := res.Impersonation; ip != nil {
			yes := map[bool]string{true: "yes", false: "no"}
			where := ""
			if ip.Namespace != "" {
				where = " in namespace " + logging.Printable(ip.Namespace)
			}
			fmt.Fprintf(w, "Constrained impersonation path: %s (%s%s, any name: %s; %s: %s)\n", map[bool]string{true: "works", false: "fails"}[ip.Works],
				ip.Identity, where, yes[ip.IdentityAllowed], logging.Printable(o.target.Verb), yes[ip.On])
			if !ip.IdentityAllowed {
				fmt.Fprintf(w, "A grant of %s for some names only is not seen here: ask \"kubectl impersonate why %s NAME\".\n", ip.Identity, ip.Identity)
			}
		}
		printGrants(w, res.Grants)
	}); err != nil {
		return err
	}
	return answer
}

func printGrants(w io.Writer, grants []rbac.Grant) {
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
		fmt.Fprintf(tw, "%s/%s\t%s\t%s/%s\t%s\n", logging.Printable(g.BindingKind), logging.Printable(g.Binding), logging.Printable(ns), logging.Printable(g.RoleKind), logging.Printable(g.Role), strings.Join(subs, ", "))
	}
	_ = tw.Flush()
}

// identityCheck is mode's check on the identity impersonated.
func identityCheck(mode string) rbac.EscalationCheck {
	i := slices.IndexFunc(rbac.EscalationChecks, func(c rbac.EscalationCheck) bool { return c.Mode == mode })
	return rbac.EscalationChecks[i]
}
