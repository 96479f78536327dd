package inspect

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
		{"pods/*", rule([]string{""}, []string{"pods/*"}, []string{"get"}, nil), "", "pods/exec", "get", true, false},
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
