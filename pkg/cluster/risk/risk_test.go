package risk

import (
	"testing"

	"github.com/stretchr/testify/assert"
	rbacv1 "k8s.io/api/rbac/v1"
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
