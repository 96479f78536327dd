package rbaceval

import (
	"testing"

	"github.com/stretchr/testify/assert"
	authzv1 "k8s.io/api/authorization/v1"
)

func TestRuleAllows(t *testing.T) {
	rule := func(groups, resources, verbs, names []string) authzv1.ResourceRule {
		return authzv1.ResourceRule{APIGroups: groups, Resources: resources, Verbs: verbs, ResourceNames: names}
	}
	tests := []struct {
		name                     string
		rule                     authzv1.ResourceRule
		group, resource, verb    string
		wantAllowed, wantPartial bool
	}{
		{"exact", rule([]string{""}, []string{"pods"}, []string{"get"}, nil), "", "pods", "get", true, false},
		{"other verb", rule([]string{""}, []string{"pods"}, []string{"get"}, nil), "", "pods", "list", false, false},
		{"other group", rule([]string{"apps"}, []string{"pods"}, []string{"get"}, nil), "", "pods", "get", false, false},
		{"wildcard verbs", rule([]string{""}, []string{"pods"}, []string{"*"}, nil), "", "pods", "delete", true, false},
		{"wildcard groups and resources", rule([]string{"*"}, []string{"*"}, []string{"get"}, nil), "apps", "deployments", "get", true, false},
		{"resourceNames: partial", rule([]string{""}, []string{"configmaps"}, []string{"get"}, []string{"a", "b"}), "", "configmaps", "get", false, true},
		{"subresource needs its own rule", rule([]string{""}, []string{"pods"}, []string{"get"}, nil), "", "pods/log", "get", false, false},
		{"subresource exact", rule([]string{""}, []string{"pods/log"}, []string{"get"}, nil), "", "pods/log", "get", true, false},
		// Kubernetes' RBAC has no "resource/*" form: the rule matches nothing
		// (a review found the earlier expansion over-reporting).
		{"pods/* is not every subresource", rule([]string{""}, []string{"pods/*"}, []string{"get"}, nil), "", "pods/exec", "get", false, false},
		{"pods/* is not pods", rule([]string{""}, []string{"pods/*"}, []string{"get"}, nil), "", "pods", "get", false, false},
		{"* matches subresources", rule([]string{""}, []string{"*"}, []string{"get"}, nil), "", "pods/log", "get", true, false},
		{"*/log is not */logs", rule([]string{""}, []string{"*/log"}, []string{"get"}, nil), "", "pods/logs", "get", false, false},
		{"*/scale needs the group", rule([]string{""}, []string{"*/scale"}, []string{"update"}, nil), "apps", "deployments/scale", "update", false, false},
		{"*/scale", rule([]string{"apps"}, []string{"*/scale"}, []string{"update"}, nil), "apps", "deployments/scale", "update", true, false},
		{"*/scale is not the resource", rule([]string{"apps"}, []string{"*/scale"}, []string{"update"}, nil), "apps", "deployments", "update", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, p := RuleAllows(tt.rule, tt.group, tt.resource, tt.verb)
			assert.Equal(t, tt.wantAllowed, a)
			assert.Equal(t, tt.wantPartial, p)
		})
	}
}

func TestObjectAllowed(t *testing.T) {
	rule := func(groups, resources, verbs, names []string) authzv1.ResourceRule {
		return authzv1.ResourceRule{APIGroups: groups, Resources: resources, Verbs: verbs, ResourceNames: names}
	}
	cm := []string{"configmaps"}
	tests := []struct {
		name        string
		rule        authzv1.ResourceRule
		object      string
		verb        string
		wantAllowed bool
	}{
		{"no resourceNames: every object", rule([]string{""}, cm, []string{"get"}, nil), "x", "get", true},
		{"named object", rule([]string{""}, cm, []string{"get"}, []string{"a", "b"}), "b", "get", true},
		{"object not named", rule([]string{""}, cm, []string{"get"}, []string{"a", "b"}), "c", "get", false},
		{"named object, other verb", rule([]string{""}, cm, []string{"get"}, []string{"a"}), "a", "delete", false},
		{"wildcard verb and named object", rule([]string{""}, cm, []string{"*"}, []string{"a"}), "a", "delete", true},
		{"wildcard resource and group", rule([]string{"*"}, []string{"*"}, []string{"get"}, nil), "x", "get", true},
		{"wildcard resource, named", rule([]string{"*"}, []string{"*"}, []string{"get"}, []string{"x"}), "x", "get", true},
		{"other group", rule([]string{"apps"}, cm, []string{"get"}, nil), "x", "get", false},
		{"subresource rule does not grant the object", rule([]string{""}, []string{"configmaps/status"}, []string{"get"}, nil), "x", "get", false},
		{"names are case-sensitive", rule([]string{""}, cm, []string{"get"}, []string{"A"}), "a", "get", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.wantAllowed, ObjectAllowed(tt.rule, "", "configmaps", tt.object, tt.verb))
		})
	}
}
