package risk

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// TestOf is the list, row by row, with the forms RBAC reads (a *
// verb, group or resource, */subresource) and what is no risk.
func TestOf(t *testing.T) {
	for _, tt := range []struct {
		verb, group, resource string
		kind                  Kind
		phrase                string
	}{
		{"impersonate", "", "users", Escalation, "kubectl --as"},
		{"impersonate", "", "groups", Escalation, "kubectl --as"},
		{"impersonate", "", "serviceaccounts", Escalation, "kubectl --as"},
		{"impersonate", ImpersonationGroup, "uids", Escalation, "kubectl --as"},
		{"impersonate", ImpersonationGroup, "userextras/scopes", Escalation, "kubectl --as"},
		{"impersonate", ImpersonationGroup, "*/scopes", Wildcard, "kubectl --as"},
		{"impersonate", ImpersonationGroup, "userextras", "", ""}, // RBAC matches userextras/KEY only
		{"impersonate", "", "pods", "", ""},
		{"bind", "rbac.authorization.k8s.io", "clusterroles", Escalation, "binding a role"},
		{"bind", "rbac.authorization.k8s.io", "roles", Escalation, "binding a role"},
		{"escalate", "rbac.authorization.k8s.io", "roles", Escalation, "permissions you do not hold"},
		{"escalate", "rbac.authorization.k8s.io", "clusterroles", Escalation, "permissions you do not hold"},
		{"escalate", "", "roles", "", ""},
		{"impersonate:user-info", ImpersonationGroup, "users", Escalation, "impersonate-on:user-info:VERB"},
		{"impersonate:serviceaccount", ImpersonationGroup, "serviceaccounts", Escalation, "impersonate-on:serviceaccount:VERB"},
		{"impersonate:arbitrary-node", ImpersonationGroup, "nodes", Escalation, "impersonate-on:arbitrary-node:VERB"},
		{"impersonate:user-info", "", "users", "", ""},
		{"impersonate-on:serviceaccount:list", "", "pods", Escalation, "needs impersonate:serviceaccount"},
		{"impersonate-on:nonsense:list", "", "pods", "", ""},
		{"get", "", "secrets", Credentials, "Secrets hold"},
		{"watch", "", "secrets", Credentials, "Secrets hold"},
		{"create", "", "secrets", Credentials, "never expires"},
		{"get", "apps", "secrets", "", ""},
		{"create", "", "serviceaccounts/token", Credentials, "issues tokens"},
		{"get", "", "serviceaccounts/token", "", ""},
		{"create", "", "pods/exec", Credentials, "runs commands"},
		{"create", "", "pods/attach", Credentials, "runs commands"},
		{"create", "", "*/exec", Wildcard, "runs commands"},
		{"create", "", "pods/portforward", "", ""},
		{"get", "", "pods/exec", Credentials, "before Kubernetes 1.35"},
		{"get", "", "pods/attach", Credentials, "before Kubernetes 1.35"},
		{"create", "", "pods", Workload, "any service account"},
		{"update", "", "pods", Workload, "image"},
		{"patch", "", "pods", Workload, "image"},
		{"delete", "", "pods", "", ""},
		{"patch", "", "pods/ephemeralcontainers", Workload, "ephemeral"},
		{"create", "", "replicationcontrollers", Workload, "any service account"},
		{"patch", "", "replicationcontrollers", Workload, "any service account"},
		{"create", "apps", "deployments", Workload, "any service account"},
		{"update", "apps", "replicasets", Workload, "any service account"},
		{"patch", "apps", "statefulsets", Workload, "any service account"},
		{"create", "apps", "daemonsets", Workload, "any service account"},
		{"create", "batch", "jobs", Workload, "any service account"},
		{"patch", "batch", "cronjobs", Workload, "any service account"},
		{"patch", "apps", "deployments/scale", "", ""},
		{"delete", "apps", "deployments", "", ""},
		{"get", "", "nodes/proxy", Node, "kubelet"},
		{"create", "", "nodes/proxy", Node, "kubelet"},
		{"get", "", "nodes", "", ""},
		{"create", "", "persistentvolumes", Node, "hostPath"},
		{"create", "", "persistentvolumeclaims", "", ""},
		{"patch", "", "namespaces", ControlPlane, "Pod Security"},
		{"update", "", "namespaces", ControlPlane, "Pod Security"},
		{"create", "", "namespaces", "", ""},
		{"create", "admissionregistration.k8s.io", "validatingwebhookconfigurations", ControlPlane, "webhook"},
		{"deletecollection", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", ControlPlane,
			"webhook"},
		{"get", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", ""},
		{"patch", "admissionregistration.k8s.io", "validatingadmissionpolicybindings", ControlPlane, "policies"},
		{"update", "apiregistration.k8s.io", "apiservices", ControlPlane, "APIService"},
		{"update", "certificates.k8s.io", "certificatesigningrequests/approval", ControlPlane, "approving a CSR"},
		{"create", "certificates.k8s.io", "certificatesigningrequests", "", ""},
		{"approve", "certificates.k8s.io", "signers", ControlPlane, "approve or sign"},
		{"sign", "certificates.k8s.io", "signers", ControlPlane, "approve or sign"},
		{"*", "", "secrets", Wildcard, "Secrets hold"},
		{"*", "", "configmaps", "", ""},
		{"get", "", "*", Wildcard, "Secrets hold"},
		{"list", "apps", "*", "", ""},
		{"create", "*", "deployments", Wildcard, "any service account"},
		{"*", "*", "*", Wildcard, "an escalation path"},
		{"get", "", "pods", "", ""},
	} {
		got := Of(tt.verb, tt.group, tt.resource)
		assert.Equal(t, tt.kind, got.Kind, "%s %s %s", tt.verb, tt.group, tt.resource)
		if tt.kind == "" {
			assert.False(t, got.Risky(), "%s %s %s", tt.verb, tt.group, tt.resource)
			assert.Empty(t, got.String())
			continue
		}
		assert.Contains(t, got.Why, tt.phrase, "%s %s %s", tt.verb, tt.group, tt.resource)
		assert.Equal(t, string(tt.kind)+": "+got.Why, got.String())
	}
}

// TestOfRule: a rule is the first risk among its verbs, groups and
// resources; names narrow nothing; non-resource URLs hold none.
func TestOfRule(t *testing.T) {
	for _, tt := range []struct {
		rule rbacv1.PolicyRule
		kind Kind
	}{
		{rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"},
			Verbs: []string{"list"}}, Credentials},
		{rbacv1.PolicyRule{APIGroups: []string{"", "apps"}, Resources: []string{"deployments"},
			Verbs: []string{"get", "create"}}, Workload},
		{rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"one"},
			Verbs: []string{"get"}}, Credentials},
		{rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}}, ""},
		{rbacv1.PolicyRule{NonResourceURLs: []string{"*"}, Verbs: []string{"*"}}, ""},
		{rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}, Wildcard},
	} {
		assert.Equal(t, tt.kind, OfRule(tt.rule).Kind, "%v", tt.rule)
	}
}

// Lasting: what a request may leave past the permission it was made with:
// a credential read or made with any verb, a risky write, a Secret or an
// RBAC object written; not a read or a plain write.
func TestLasting(t *testing.T) {
	for _, c := range []struct {
		verb, group, resource string
		kind                  Kind
	}{
		{"get", "", "secrets", Credentials},
		{"list", "", "secrets", Credentials},
		{"get", "", "pods/exec", Credentials},
		{"create", "", "serviceaccounts/token", Credentials},
		{"create", "", "secrets", Credentials},
		{"patch", "", "secrets", Credentials},
		{"update", "", "secrets", Credentials},
		{"delete", "", "secrets", ""},
		{"create", "batch", "cronjobs", Workload},
		{"create", "rbac.authorization.k8s.io", "rolebindings", Escalation},
		{"patch", "rbac.authorization.k8s.io", "clusterroles", Escalation},
		{"delete", "rbac.authorization.k8s.io", "rolebindings", ""},
		{"get", "", "pods", ""},
		{"update", "", "configmaps", ""},
		{"list", "batch", "cronjobs", ""},
	} {
		assert.Equal(t, c.kind, Lasting(c.verb, c.group, c.resource).Kind, "%s %s %s", c.verb, c.group, c.resource)
	}
}

// WritesGrants is deploy/sudo's admission rule for roles and bindings,
// read from the manifest: for every verb a request or a rule can carry
// and every resource of the group (and one of another group), the policy
// matches the request exactly when WritesGrants says it writes a grant.
// A verb reaches admission as its operation (kube-apiserver's
// admission.Operation); reads and RBAC's own bind and escalate reach none.
func TestWritesGrantsIsTheAdmissionRule(t *testing.T) {
	const name = "sudo-persistence.kubectl-impersonate.io"
	doc, err := os.ReadFile("../../../deploy/sudo/admission.yaml")
	require.NoError(t, err)
	var rule admissionregistrationv1.RuleWithOperations
	var policy *admissionregistrationv1.ValidatingAdmissionPolicy
	var actions []admissionregistrationv1.ValidationAction
	for d := range strings.SplitSeq(string(doc), "\n---\n") {
		var p admissionregistrationv1.ValidatingAdmissionPolicy
		require.NoError(t, yaml.Unmarshal([]byte(d), &p))
		if p.Kind == "ValidatingAdmissionPolicyBinding" && p.Name == name {
			var b admissionregistrationv1.ValidatingAdmissionPolicyBinding
			require.NoError(t, yaml.Unmarshal([]byte(d), &b))
			actions = b.Spec.ValidationActions
		}
		if p.Kind != "ValidatingAdmissionPolicy" || p.Name != name {
			continue
		}
		policy = &p
		for _, r := range p.Spec.MatchConstraints.ResourceRules {
			if slices.Equal(r.APIGroups, []string{rbacv1.GroupName}) {
				rule = r.RuleWithOperations
			}
		}
	}
	require.NotNil(t, policy, "%s in deploy/sudo/admission.yaml", name)
	require.NotEmpty(t, rule.Resources, "%s's rule for %s", name, rbacv1.GroupName)
	// Nothing narrows the rule: every version, both scopes, no exclusion or
	// selector; the policy refuses the group's writes, and its binding denies.
	assert.Equal(t, []string{"*"}, rule.APIVersions)
	assert.True(t, rule.Scope == nil || *rule.Scope == admissionregistrationv1.AllScopes, "the rule has a scope")
	mc := policy.Spec.MatchConstraints
	assert.Empty(t, mc.ExcludeResourceRules)
	assert.True(t, mc.NamespaceSelector == nil || len(mc.NamespaceSelector.MatchLabels)+
		len(mc.NamespaceSelector.MatchExpressions) == 0, "no namespace selector")
	assert.True(t, mc.ObjectSelector == nil || len(mc.ObjectSelector.MatchLabels)+
		len(mc.ObjectSelector.MatchExpressions) == 0, "no object selector")
	assert.True(t, slices.ContainsFunc(policy.Spec.Validations, func(v admissionregistrationv1.Validation) bool {
		return v.Expression == "request.resource.group != 'rbac.authorization.k8s.io'"
	}), "the validation that refuses the group's writes")
	assert.Equal(t, admissionregistrationv1.Fail, *policy.Spec.FailurePolicy)
	assert.Equal(t, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}, actions, "its binding")
	operation := map[string]admissionregistrationv1.OperationType{"create": admissionregistrationv1.Create,
		"update": admissionregistrationv1.Update, "patch": admissionregistrationv1.Update,
		"delete": admissionregistrationv1.Delete, "deletecollection": admissionregistrationv1.Delete}
	n := 0
	for _, verb := range []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection",
		"bind", "escalate"} {
		for _, res := range []string{"roles", "clusterroles", "rolebindings", "clusterrolebindings", "configmaps"} {
			admitted := slices.Contains(rule.Operations, operation[verb]) && slices.Contains(rule.Resources, res)
			assert.Equal(t, admitted, WritesGrants(verb, rbacv1.GroupName, res), "%s %s", verb, res)
			n += map[bool]int{true: 1}[admitted]
		}
	}
	assert.Equal(t, 12, n, "create, update and patch of the four")
	assert.False(t, WritesGrants("create", "", "roles"), "another group's roles")
	assert.True(t, WritesGrants("*", "*", "*"), "a wildcard matches, as in a rule")
	assert.False(t, WritesGrants("*", "apps", "*"))
}
