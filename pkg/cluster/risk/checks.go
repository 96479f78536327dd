package risk

import (
	"slices"
	"strings"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/resource"
)

// The escalation paths: verbs that give an identity another's permissions
// (impersonation) or let it grant itself more (bind, escalate), asked as
// kube-apiserver's impersonation filter and RBAC registry ask them
// (k8s.io/apiserver pkg/endpoints/filters/impersonation, mode.go, v0.37).

// ImpersonationGroup is the API group of constrained impersonation's
// resources, and of uids and userextras in the legacy mode.
const ImpersonationGroup = "authentication.k8s.io"

// Constrained impersonation's modes (KEP-5284, Kubernetes 1.35+): a verb
// impersonate:<mode> on the identity, and impersonate-on:<mode>:<verb> on
// each request made as it.
const (
	ModeUserInfo       = "user-info"
	ModeServiceAccount = "serviceaccount"
	ModeArbitraryNode  = "arbitrary-node"
	ModeAssociatedNode = "associated-node"
)

// ImpersonationModes are the constrained modes, in the server's order of
// trying them (after which it tries the legacy impersonate verb).
var ImpersonationModes = []string{ModeAssociatedNode, ModeArbitraryNode, ModeServiceAccount, ModeUserInfo}

// EscalationCheck is one question of the escalation section.
type EscalationCheck struct {
	Verb        string
	Group       string
	Resource    string
	Subresource string
	Namespaced  bool
	// Name is the name the server asks with: "" (a rule with resourceNames
	// then grants some names only), "*" for associated-node, whose check
	// the server makes valid for every node, and for userextras, asked for
	// every key (the subresource) and value (the name) as the server asks
	// a large set of extra.
	Name string
	// Mode is the constrained impersonation mode whose primary check this
	// is (the identity), "" for the others.
	Mode string
}

// String is VERB RESOURCE[.GROUP][/SUBRESOURCE].
func (c EscalationCheck) String() string {
	s := c.Verb + " " + resource.Resource{Group: c.Group, Name: c.Resource}.String()
	if c.Subresource != "" {
		s += "/" + c.Subresource
	}
	return s
}

// EscalationChecks are the questions, in the order they are shown: legacy
// impersonation (kubectl --as: users, groups, service accounts, UIDs and
// extra), bind and escalate on roles (binding a ClusterRole is asked in the
// namespace of a RoleBinding, and at cluster scope for a
// ClusterRoleBinding), and the constrained modes' identity checks.
var EscalationChecks = []EscalationCheck{
	{Verb: "impersonate", Resource: "users"},
	{Verb: "impersonate", Resource: "groups"},
	{Verb: "impersonate", Resource: "serviceaccounts", Namespaced: true},
	{Verb: "impersonate", Group: ImpersonationGroup, Resource: "uids"},
	{Verb: "impersonate", Group: ImpersonationGroup, Resource: "userextras", Subresource: "*", Name: "*"},
	{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "roles", Namespaced: true},
	{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Namespaced: true},
	{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
	{Verb: "escalate", Group: "rbac.authorization.k8s.io", Resource: "roles", Namespaced: true},
	{Verb: "escalate", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
	{Verb: "impersonate:" + ModeUserInfo, Group: ImpersonationGroup, Resource: "users", Mode: ModeUserInfo},
	{Verb: "impersonate:" + ModeUserInfo, Group: ImpersonationGroup, Resource: "groups"},
	{Verb: "impersonate:" + ModeUserInfo, Group: ImpersonationGroup, Resource: "uids"},
	{Verb: "impersonate:" + ModeUserInfo, Group: ImpersonationGroup, Resource: "userextras", Subresource: "*",
		Name: "*"},
	{Verb: "impersonate:" + ModeServiceAccount, Group: ImpersonationGroup, Resource: "serviceaccounts",
		Namespaced: true, Mode: ModeServiceAccount},
	{Verb: "impersonate:" + ModeArbitraryNode, Group: ImpersonationGroup, Resource: "nodes", Mode: ModeArbitraryNode},
	{Verb: "impersonate:" + ModeAssociatedNode, Group: ImpersonationGroup, Resource: "nodes", Name: "*",
		Mode: ModeAssociatedNode},
}

// ImpersonateOnVerb is the verb constrained impersonation asks for verb
// while impersonating in mode: impersonate-on:<mode>:<verb>.
func ImpersonateOnVerb(mode, verb string) string { return "impersonate-on:" + mode + ":" + verb }

// ParseImpersonateOn reads impersonate-on:<mode>:<verb>: the mode (one of
// ImpersonationModes) and the verb.
func ParseImpersonateOn(verb string) (mode, onVerb string, ok bool) {
	rest, ok := strings.CutPrefix(verb, "impersonate-on:")
	if !ok {
		return "", "", false
	}
	mode, onVerb, ok = strings.Cut(rest, ":")
	return mode, onVerb, ok && onVerb != "" && slices.Contains(ImpersonationModes, mode)
}

// checksFor are the escalation checks (EscalationChecks) of verb on
// group/resource: none when it is no escalation path.
func checksFor(verb, group, resource string) []EscalationCheck {
	var out []EscalationCheck
	for _, e := range EscalationChecks {
		if e.Verb == verb && e.Group == group && e.Resource == resource {
			out = append(out, e)
		}
	}
	return out
}

// ClusterScoped tells whether kube-apiserver asks verb on resource (of
// group, without a subresource) at cluster scope whatever the namespace
// of the request: an escalation
// check that is never a namespace's (EscalationChecks: impersonating users,
// groups, UIDs, extra and nodes, and escalating cluster roles; binding a
// ClusterRole is asked in a RoleBinding's namespace too). A RoleBinding
// never grants those, so why and who-can ask them without a namespace.
func ClusterScoped(verb, group, resource string) bool {
	checks := checksFor(verb, group, resource)
	return len(checks) > 0 && !slices.ContainsFunc(checks, func(e EscalationCheck) bool { return e.Namespaced })
}

// StreamingCommand is the kubectl command that streams over the core
// resource/subresource resource ("pods/exec": "kubectl exec"), "" for none:
// since Kubernetes 1.35 it needs get and create on it (WebSockets).
func StreamingCommand(resource string) string {
	return map[string]string{"pods/exec": "kubectl exec", "pods/attach": "kubectl attach",
		"pods/portforward": "kubectl port-forward"}[resource]
}

// StreamingPair is the other verb a streaming subresource needs with verb
// (pods/exec, attach, portforward: a WebSocket reaches them with get, an
// SPDY upgrade with create, and since Kubernetes 1.35 kube-apiserver asks
// both for a WebSocket: AuthorizePodWebsocketUpgradeCreatePermission);
// "" for anything else.
func StreamingPair(verb, group, resource string) string {
	if group != "" || StreamingCommand(resource) == "" {
		return ""
	}
	return map[string]string{"get": "create", "create": "get"}[verb]
}
