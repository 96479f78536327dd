package risk

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// Risk is why holding a verb on a resource lets its holder gain more than
// the rule names. It is the one answer to "is this dangerous?": why,
// who-can, access, least-privilege and the graphs all ask Of or
// OfRule.
//
// The list is Kubernetes' own ("Role Based Access Control Good Practices",
// its privilege escalation risks), with the escalation checks the access
// matrix asks (EscalationChecks):
//   - escalation: impersonate, bind and escalate, constrained
//     impersonation's impersonate:MODE and impersonate-on:MODE:VERB;
//   - credentials: reading Secrets, issuing service account tokens, exec
//     and attach into pods;
//   - workloads: creating pods or anything that makes them (deployments,
//     daemonsets, jobs, cronjobs, …), changing their templates, patching
//     pods and adding ephemeral containers;
//   - nodes and volumes: the kubelet's proxy, persistent volumes;
//   - the control plane: admission webhooks and policies, APIServices,
//     CSR approval and signers, namespace labels (Pod Security);
//   - a wildcard (*) that holds one of those.
type Risk struct {
	Kind Kind `json:"kind"`
	// Why is a noun phrase: "create deployments is <Why>".
	Why string `json:"why"`
}

// Risky tells whether r is a risk at all.
func (r Risk) Risky() bool { return r.Why != "" }

// String is "KIND: WHY", "" for no risk.
func (r Risk) String() string {
	if !r.Risky() {
		return ""
	}
	return string(r.Kind) + ": " + r.Why
}

// Kind is the family of a Risk.
type Kind string

// The kinds of risk.
const (
	Escalation   Kind = "escalation"
	Credentials  Kind = "credentials"
	Workload     Kind = "workload"
	Node         Kind = "node"
	ControlPlane Kind = "control-plane"
	// Wildcard: a *, in the verb, group or resource asked, holds a
	// risk of another kind.
	Wildcard Kind = "wildcard"
)

// riskEntry is one row of the list: verbs on resources ("resource" or
// "resource/subresource"; "resource/*" any subresource) of a group.
type riskEntry struct {
	group     string
	resources []string
	verbs     []string
	kind      Kind
	why       string
}

const (
	groupApps         = "apps"
	groupBatch        = "batch"
	groupAdmission    = "admissionregistration.k8s.io"
	groupCertificates = "certificates.k8s.io"
)

var (
	writeVerbs  = []string{"create", "update", "patch", "delete", "deletecollection"}
	changeVerbs = []string{"update", "patch"}
)

// workloadWhy is creating a pod, by any means.
const workloadWhy = "a path to other identities' permissions: a pod may run as any service account of its " +
	"namespace and mount any of its Secrets"

// risks is the list; riskOfEscalation adds EscalationChecks.
var risks = []riskEntry{
	{"", []string{"secrets"}, []string{"get", "list", "watch"}, Credentials,
		"a path to other identities' credentials: Secrets hold service account tokens and other credentials"},
	{"", []string{"secrets"}, []string{"create"}, Credentials,
		"a path to other identities' credentials: a Secret of type kubernetes.io/service-account-token made for a " +
			"service account is filled with its token, which never expires"},
	{"", []string{"serviceaccounts/token"}, []string{"create"}, Credentials,
		"a path to other identities' credentials: it issues tokens of service accounts, which act as them"},
	{"", []string{"pods/exec", "pods/attach"}, []string{"get"}, Credentials,
		"a path to other identities' credentials: get alone runs commands in pods over WebSockets before " +
			"Kubernetes 1.35, or where AuthorizePodWebsocketUpgradeCreatePermission is off"},
	{"", []string{"pods/exec", "pods/attach"}, []string{"create"}, Credentials,
		"a path to other identities' credentials: it runs commands in pods, with their service accounts' tokens " +
			"and mounted Secrets"},
	{"", []string{"pods", "replicationcontrollers"}, []string{"create"}, Workload, workloadWhy},
	{"", []string{"replicationcontrollers"}, changeVerbs, Workload, workloadWhy},
	{groupApps, []string{"deployments", "replicasets", "statefulsets", "daemonsets"},
		[]string{"create", "update", "patch"}, Workload, workloadWhy},
	{groupBatch, []string{"jobs", "cronjobs"}, []string{"create", "update", "patch"}, Workload, workloadWhy},
	{"", []string{"pods"}, changeVerbs, Workload,
		"a path to other identities' permissions: changing a pod's image runs other code with its service account"},
	{"", []string{"pods/ephemeralcontainers"}, changeVerbs, Workload,
		"a path to other identities' credentials: an ephemeral container runs in a pod, with its service " +
			"account and mounted Secrets"},
	{"", []string{"nodes/proxy"}, []string{"get", "create", "update", "patch", "delete"}, Node,
		"a path to every pod of a node: the kubelet's API, exec included"},
	{"", []string{"persistentvolumes"}, []string{"create"}, Node,
		"a path to the nodes' files: a hostPath persistent volume reads them"},
	{"", []string{"namespaces"}, changeVerbs, ControlPlane,
		"a path around Pod Security: a namespace's labels set which pods it admits"},
	{groupAdmission, []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"}, writeVerbs,
		ControlPlane, "a path to every request of the cluster: an admission webhook sees and may change " +
			"objects (Secrets included), or stop the guards"},
	{groupAdmission, []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings",
		"mutatingadmissionpolicies", "mutatingadmissionpolicybindings"}, writeVerbs, ControlPlane,
		"a path around the cluster's guards: admission policies decide what may be created"},
	{"apiregistration.k8s.io", []string{"apiservices"}, writeVerbs, ControlPlane,
		"a path to every request of an API group: an APIService sends them, credentials included, to a server " +
			"of its choosing"},
	{groupCertificates, []string{"certificatesigningrequests/approval"}, changeVerbs, ControlPlane,
		"a path to other identities: approving a CSR issues a client certificate for any name the signer allows"},
	{groupCertificates, []string{"signers"}, []string{"approve", "sign"}, ControlPlane,
		"a path to other identities: it lets the holder approve or sign certificates for the signer named"},
}

// Of is the risk of holding verb on resource ("resource" or
// "resource/subresource") of group; a * in any of them (as a rule holds
// it) is the worst of what it holds.
func Of(verb, group, resource string) Risk {
	if mode, onVerb, ok := ParseImpersonateOn(verb); ok {
		return Risk{Kind: Escalation, Why: fmt.Sprintf(constrainedPath+"%s on this resource as an identity "+
			"impersonated in the %s mode, which also needs impersonate:%s on that identity", onVerb, mode, mode)}
	}
	if r := escalationRisk(verb, group, resource); r.Risky() {
		return wildcarded(r, verb, group, resource)
	}
	for _, e := range risks {
		if !matchOrStar(group, e.group) ||
			!slices.ContainsFunc(e.verbs, func(v string) bool { return matchOrStar(verb, v) }) {
			continue
		}
		if slices.ContainsFunc(e.resources, func(r string) bool { return resourceCovers(resource, r) }) {
			return wildcarded(Risk{Kind: e.kind, Why: e.why}, verb, group, resource)
		}
	}
	return Risk{}
}

// Lasting is what a request made with verb on resource of group may leave
// that lasts past the permission it was made with (a grant's end): a
// credential risk with any verb (a token read or copied is kept); a write
// that is a risk (Of); a Secret written (a service-account-token one is
// filled with a token that never expires); a role or binding written,
// which keeps granting.
func Lasting(verb, group, resource string) Risk {
	r := Of(verb, group, resource)
	if r.Kind == Credentials {
		return r // a credential read or made (a token, a Secret, a shell in a pod) may be kept
	}
	if verb != "create" && verb != "update" && verb != "patch" {
		return Risk{}
	}
	if r.Risky() {
		return r
	}
	if group == "" && resource == "secrets" {
		return Risk{Kind: Credentials, Why: "a path to other identities' credentials: a service-account-token " +
			"Secret changed is filled with a token of the service account it names, which never expires"}
	}
	if WritesGrants(verb, group, resource) {
		return Risk{Kind: Escalation, Why: "a path to keep permissions: a role or binding written keeps " +
			"granting after the permission it was written with ends"}
	}
	return Risk{}
}

// WritesGrants tells whether verb on the group's resource writes a role or a
// binding directly, which keeps granting after the permission it was written
// with ends (a grant's holder can still have one written for it, by a
// workload or a controller running as another identity: sudo report lists
// those). It is the one rule for what a sudo grant may not write: Lasting
// counts it, least-privilege --sudo-role leaves it out of a request's role,
// and deploy/sudo's admission refuses it under a grant (its CREATE and
// UPDATE of these four resources; a test holds the two equal). A wildcard
// (*) matches anything, as in a rule.
func WritesGrants(verb, group, resource string) bool {
	in := func(v string, of ...string) bool { return v == "*" || slices.Contains(of, v) }
	return in(verb, "create", "update", "patch") && in(group, rbacv1.GroupName) &&
		in(resource, "roles", "clusterroles", "rolebindings", "clusterrolebindings")
}

// OfRule is the risk of a rule: the first of its verbs, groups and
// resources that is one (its resourceNames narrow it, but a Secret named
// is still read). Non-resource URLs hold none.
func OfRule(rule rbacv1.PolicyRule) Risk {
	for _, g := range rule.APIGroups {
		for _, res := range rule.Resources {
			for _, v := range rule.Verbs {
				if r := Of(v, g, res); r.Risky() {
					return r
				}
			}
		}
	}
	return Risk{}
}

const constrainedPath = "an escalation path (constrained impersonation: alpha in Kubernetes 1.35, on by default " +
	"from 1.36): "

// escalationRisk is the risk of the escalation checks (EscalationChecks):
// impersonation in both modes, bind and escalate.
func escalationRisk(verb, group, resource string) Risk {
	for _, e := range EscalationChecks {
		if !matchOrStar(verb, e.Verb) || !matchOrStar(group, e.Group) {
			continue
		}
		target := e.Resource
		if e.Subresource != "" {
			target += "/" + e.Subresource
		}
		if !resourceCovers(resource, target) {
			continue
		}
		why := fmt.Sprintf(constrainedPath+"acting as the identity named, for the verbs and resources an "+
			"impersonate-on:%s:VERB grants", strings.TrimPrefix(e.Verb, "impersonate:"))
		switch e.Verb {
		case "impersonate":
			why = "an escalation path: impersonating acts with the permissions of the identity named (kubectl --as, " +
				"--as-group, --as-uid), on every verb and resource"
		case "bind":
			why = "an escalation path: binding a role grants its permissions to anyone, yourself included, even " +
				"those you do not hold"
		case "escalate":
			why = "an escalation path: creating or updating a role with permissions you do not hold"
		}
		return Risk{Kind: Escalation, Why: why}
	}
	return Risk{}
}

// wildcarded is r, told as a wildcard's when a * asked for it.
func wildcarded(r Risk, verb, group, resource string) Risk {
	if verb != "*" && group != "*" && !strings.Contains(resource, "*") {
		return r
	}
	return Risk{Kind: Wildcard, Why: "a wildcard (*) that holds " + r.Why}
}

// matchOrStar: asked is want, or a * that holds it.
func matchOrStar(asked, want string) bool { return asked == want || asked == "*" }

// resourceCovers tells whether a rule's resource (RBAC's forms: "*",
// "resource", "resource/subresource", "*/subresource") holds target
// ("resource" or "resource/subresource"; "resource/*" any subresource of
// it).
func resourceCovers(ruleResource, target string) bool {
	if ruleResource == "*" || ruleResource == target {
		return true
	}
	tres, tsub, _ := strings.Cut(target, "/")
	rres, rsub, ok := strings.Cut(ruleResource, "/")
	if !ok || tsub == "" {
		return false
	}
	return (rres == "*" || rres == tres) && (tsub == "*" || rsub == tsub)
}
