package inspect

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/kubeapi"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbaceval"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/risk"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
)

// WhyResult is why's answer (-o json|yaml).
type WhyResult struct {
	Allowed  bool             `json:"allowed"`
	Denied   bool             `json:"denied,omitempty"`
	Reason   string           `json:"reason,omitempty"`
	Username string           `json:"username"`
	Groups   []string         `json:"groups"`
	Grants   []rbaceval.Grant `json:"grants,omitempty"`
	RBACNote string           `json:"rbacNote,omitempty"`
	// Streaming is set for pods/exec, pods/attach and pods/portforward: the
	// command works only with both verbs.
	Streaming *StreamingAccess `json:"streaming,omitempty"`
	// Risk says what the permission asked about lets one gain beyond what
	// it names, when it does (risk.Of).
	Risk risk.Risk `json:"risk,omitzero"`
	// DecidedElsewhere: RBAC's bindings (readable) say otherwise than the
	// answer: another authorizer of the chain (a webhook) decided.
	DecidedElsewhere bool `json:"decidedElsewhere,omitempty"`
	// Impersonation is set for impersonate-on:<mode>:<verb>: the mode's
	// identity check asked too, since the path needs both.
	Impersonation *ImpersonationPath `json:"impersonation,omitempty"`
	// Sudo are the identity's live sudo grants in the namespace asked
	// about (read when the client may: deploy/sudo installed).
	Sudo []elevation.Note `json:"sudo,omitempty"`
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

// WhyTarget resolves t through discovery (ResolveTarget) and says where
// its RBAC objects are read: in the namespace asked about, even for a
// check the server makes at cluster scope (a RoleBinding grants it
// nowhere, and the grants say so), so that reading needs no more rights.
func WhyTarget(
	ctx context.Context, d Discoverer, t rbaceval.Target, warn func(string),
) (target rbaceval.Target, readNS string, err error) {
	if t, err = ResolveTarget(ctx, d, t, warn); err != nil {
		return t, "", err
	}
	readNS = t.Namespace
	if t.ClusterScoped() {
		t.Namespace = ""
	}
	return t, readNS, nil
}

// Why asks the authorizer chain about t (resolved by WhyTarget) as the
// client's identity, then what a person needs to understand the answer:
// who the identity is, the other verb of a streaming command, the
// identity check of a constrained impersonation path, and the RBAC
// bindings behind it (read in readNS) when the identity may read them.
func Why(ctx context.Context, c WhyClient, t rbaceval.Target, readNS string) (*WhyResult, error) {
	st, err := c.Why(ctx, t)
	if err != nil {
		return nil, err
	}
	ui, _, err := c.WhoAmI(ctx)
	if err != nil {
		return nil, err
	}
	res := &WhyResult{Allowed: st.Allowed, Denied: st.Denied, Reason: st.Reason, Username: ui.Username,
		Groups: ui.Groups}
	if res.Streaming, err = streaming(ctx, c, t, st.Allowed); err != nil {
		return nil, err
	}
	if t.NonResourceURL == "" {
		res.Risk = risk.Of(t.Verb, t.Group, t.ResourceWithSub())
	}
	if res.Impersonation, err = impersonationPath(ctx, c, t, st.Allowed); err != nil {
		return nil, err
	}
	bindings, err := c.ReadRBAC(ctx, readNS)
	var ae *kubeapi.APIError
	switch {
	case errors.As(err, &ae) && ae.Code == 403:
		res.RBACNote = "you may not read RBAC objects here, so only the authorizer's reason is shown"
	case err != nil && ctx.Err() == nil:
		// The decision stands without the bindings behind it.
		res.RBACNote = "could not read RBAC objects (" + logging.OneLine(err.Error(), 200) + "), so only the " +
			"authorizer's reason is shown"
	case err != nil:
		return nil, err
	default:
		res.Grants = rbaceval.ForIdentity(bindings.WhoCan(t), ui.Username, ui.Groups)
		res.DecidedElsewhere = (len(res.Grants) > 0) != res.Allowed
	}
	// The identity's sudo grants are read where they explain the answer:
	// it carries an elevation group, or the answer is no (a grant held may
	// be what it lacks). Otherwise why asks no more than before.
	carries := slices.ContainsFunc(res.Groups, func(g string) bool {
		return strings.HasPrefix(g, elevation.GroupPrefix)
	})
	if ec, ok := c.(elevation.Client); ok && t.Namespace != "" && (carries || !res.Allowed) {
		res.Sudo = sudoNotes(ctx, ec, t.Namespace, res, time.Now())
	}
	return res, nil
}

// UnderGrant is the grant a namespace's matrix is asked under.
type UnderGrant struct {
	elevation.Note
	Namespace string
}

// GrantUnder reads the grant ref names (a kubeconfig's impersonation extra,
// as kubectl impersonate sudo writes it) for user when it is for one of
// namespaces, with c (the caller's own rights): 2 requests, the grant and
// its request. It is nil when ref names none of them, an error when the
// grant cannot be read, is not user's or does not count.
func GrantUnder(
	ctx context.Context, c elevation.Client, ref, user string, namespaces []string, now time.Time,
) (*UnderGrant, error) {
	ns, _, ok := elevation.ParseRef(ref)
	if !ok || c == nil || !slices.Contains(namespaces, ns) {
		return nil, nil
	}
	g, err := elevation.Live(ctx, c, ref, now)
	if err != nil {
		return nil, err
	}
	if g.Spec.Requester != user {
		return nil, fmt.Errorf("grant %s is %s's, not %s's", ref, g.Spec.Requester, user)
	}
	return &UnderGrant{Note: elevation.NoteOf(*g, true), Namespace: ns}, nil
}

// sudoNotes are the identity's live grants in ns, and whether one allows
// the answer: its group is the identity's and a binding of it grants. A
// cluster without deploy/sudo, or an identity that may not read grants,
// has none.
func sudoNotes(ctx context.Context, c elevation.Client, ns string, res *WhyResult, now time.Time) []elevation.Note {
	grants, err := elevation.Grants(ctx, c, ns)
	if err != nil {
		return nil
	}
	reqs, err := elevation.Requests(ctx, c, ns)
	if err != nil {
		return nil
	}
	var out []elevation.Note
	for _, g := range grants {
		if g.Spec.Requester != res.Username {
			continue
		}
		if ok, _ := elevation.Check(g, elevation.RequestOf(g, reqs), now); !ok {
			continue
		}
		group := elevation.GroupOf(ns, g.Spec.Role)
		// Allowed, carrying the group, and a binding of the group grants
		// it (or the bindings could not be read).
		allows := res.Allowed && slices.Contains(res.Groups, group) && res.RBACNote != ""
		for _, b := range res.Grants {
			allows = allows || res.Allowed && slices.Contains(res.Groups, group) &&
				slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool {
					return s.Kind == rbacv1.GroupKind && s.Name == group
				})
		}
		out = append(out, elevation.NoteOf(g, allows))
	}
	return out
}

// streaming asks the other verb of kubectl exec, attach or port-forward's
// subresource (nil for any other target): the command needs both.
func streaming(ctx context.Context, c WhyClient, t rbaceval.Target, allowed bool) (*StreamingAccess, error) {
	otherVerb := risk.StreamingPair(t.Verb, t.Group, t.Resource+"/"+t.Subresource)
	if otherVerb == "" {
		return nil, nil
	}
	command := risk.StreamingCommand(t.Resource + "/" + t.Subresource)
	other := t
	other.Verb = otherVerb
	ost, err := c.Why(ctx, other)
	if err != nil {
		return nil, err
	}
	sa := &StreamingAccess{Command: command, Get: allowed, Create: ost.Allowed}
	if t.Verb == "create" {
		sa.Get, sa.Create = ost.Allowed, allowed
	}
	sa.Works = sa.Get && sa.Create
	return sa, nil
}

// impersonationPath asks the identity check of impersonate-on:<mode>:<verb>
// (nil for any other target).
func impersonationPath(ctx context.Context, c WhyClient, t rbaceval.Target, on bool) (*ImpersonationPath, error) {
	mode, _, ok := risk.ParseImpersonateOn(t.Verb)
	if !ok || t.NonResourceURL != "" {
		return nil, nil
	}
	check := IdentityCheck(mode)
	idt := rbaceval.Target{Verb: check.Verb, Group: check.Group, Resource: check.Resource, Name: check.Name}
	if check.Namespaced {
		idt.Namespace = t.Namespace
	}
	ist, err := c.Why(ctx, idt)
	if err != nil {
		return nil, err
	}
	return &ImpersonationPath{Mode: mode, Identity: check.String(), Namespace: idt.Namespace,
		IdentityAllowed: ist.Allowed, On: on, Works: ist.Allowed && on}, nil
}

// IdentityCheck is mode's check on the identity impersonated.
func IdentityCheck(mode string) risk.EscalationCheck {
	i := slices.IndexFunc(risk.EscalationChecks, func(c risk.EscalationCheck) bool { return c.Mode == mode })
	return risk.EscalationChecks[i]
}
