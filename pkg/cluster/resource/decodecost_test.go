package resource

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/kubeapi"
)

// repeated is n copies of item, comma-separated.
func repeated(item string, n int) string {
	return strings.TrimSuffix(strings.Repeat(item+",", n), ",")
}

// TestDecodeCostBounds: for the shapes a hostile server would send to make
// a small answer large once decoded (empty items, rules, subjects, review
// rules, discovery groups, labels, strings), what encoding/json allocates
// into this project's types stays under kubeapi.DecodeCost's bound.
func TestDecodeCostBounds(t *testing.T) {
	const n = 20000
	for _, tt := range []struct {
		name string
		doc  string
		page bool
		into func() any
	}{
		{"empty bindings", `{"items":[` + repeated(`{}`, n) + `]}`, false, func() any { return &rbacv1.ClusterRoleBindingList{} }},
		{"empty roles", `{"items":[` + repeated(`{}`, n) + `]}`, false, func() any { return &rbacv1.RoleList{} }},
		{"empty rules", `{"items":[{"rules":[` + repeated(`{}`, n) + `]}]}`, false, func() any { return &rbacv1.ClusterRoleList{} }},
		{"rules of empty lists", `{"items":[{"rules":[` + repeated(`{"verbs":[],"resources":[],"apiGroups":[],"resourceNames":[]}`, n) + `]}]}`, false, func() any { return &rbacv1.ClusterRoleList{} }},
		{"empty subjects", `{"items":[{"subjects":[` + repeated(`{}`, n) + `]}]}`, false, func() any { return &rbacv1.RoleBindingList{} }},
		{"one-letter verbs", `{"items":[{"rules":[{"verbs":[` + repeated(`"a"`, n) + `]}]}]}`, false, func() any { return &rbacv1.ClusterRoleList{} }},
		{"labels", `{"items":[{"metadata":{"labels":{` + func() string {
			var b strings.Builder
			for i := range n {
				fmt.Fprintf(&b, `"k%d":"",`, i)
			}
			return strings.TrimSuffix(b.String(), ",")
		}() + `}}}]}`, false, func() any { return &rbacv1.ClusterRoleList{} }},
		{"empty review rules", `{"status":{"resourceRules":[` + repeated(`{}`, n) + `]}}`, false, func() any { return &authzv1.SelfSubjectRulesReview{} }},
		{"empty discovery groups", `{"groups":[` + repeated(`{}`, n) + `]}`, false, func() any { return &metav1.APIGroupList{} }},
		{"empty aggregated groups", `{"items":[` + repeated(`{"versions":[{"resources":[{}]}]}`, n) + `]}`, false, func() any { return &apidiscoveryv2.APIGroupDiscoveryList{} }},
		{"empty resources", `{"resources":[` + repeated(`{}`, n) + `]}`, false, func() any { return &metav1.APIResourceList{} }},
		{"a page of empty items", `{"items":[` + repeated(`{}`, n) + `]}`, true, func() any { return &listPage{} }},
		{"a page of items with labels", `{"items":[` + repeated(`{"metadata":{"name":"n","labels":{"a":"","b":"","c":""}}}`, n) + `]}`, true, func() any { return &listPage{} }},
		{"a page of full items", `{"items":[` + repeated(`{"metadata":{"name":"n","labels":{"a":""}}}`, n) + `]}`, true, func() any { return &listPage{full: true} }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := []byte(tt.doc)
			cost := kubeapi.DecodeCost(b, tt.page)
			out := tt.into()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			if err := json.Unmarshal(b, out); err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&after)
			allocated := int64(after.TotalAlloc - before.TotalAlloc)
			t.Logf("%s: %d bytes of JSON, %d allocated, bound %d (%.1fx)", tt.name, len(b), allocated, cost+int64(len(b)), float64(cost+int64(len(b)))/float64(allocated))
			assert.LessOrEqual(t, allocated, cost+int64(len(b)), "what decoding allocated is within DecodeCost's bound (plus the answer's bytes)")
			runtime.KeepAlive(out)
		})
	}
}
