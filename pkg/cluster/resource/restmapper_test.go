package resource

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/restmapper"
	clienttesting "k8s.io/client-go/testing"
)

// servedGroups is a discovery answer as kube-apiserver gives it, in its
// order (the core group, the built-in groups, then CRDs), with a CRD that
// takes built-ins' names (a plural, a short name, a kind).
var servedGroups = []struct {
	group, version string
	resources      []metav1.APIResource
}{
	{"", "v1", []metav1.APIResource{
		{Name: "pods", SingularName: "pod", Kind: "Pod", ShortNames: []string{"po"}, Namespaced: true},
		{Name: "configmaps", SingularName: "configmap", Kind: "ConfigMap", ShortNames: []string{"cm"}, Namespaced: true},
		{Name: "events", SingularName: "event", Kind: "Event", ShortNames: []string{"ev"}, Namespaced: true},
		{Name: "namespaces", SingularName: "namespace", Kind: "Namespace", ShortNames: []string{"ns"}},
		{Name: "serviceaccounts", SingularName: "serviceaccount", Kind: "ServiceAccount", ShortNames: []string{"sa"}, Namespaced: true},
	}},
	{"apps", "v1", []metav1.APIResource{
		{Name: "deployments", SingularName: "deployment", Kind: "Deployment", ShortNames: []string{"deploy"}, Namespaced: true},
		{Name: "statefulsets", SingularName: "statefulset", Kind: "StatefulSet", ShortNames: []string{"sts"}, Namespaced: true},
	}},
	{"events.k8s.io", "v1", []metav1.APIResource{
		{Name: "events", SingularName: "event", Kind: "Event", ShortNames: []string{"ev"}, Namespaced: true},
	}},
	{"rbac.authorization.k8s.io", "v1", []metav1.APIResource{
		{Name: "clusterroles", SingularName: "clusterrole", Kind: "ClusterRole"},
		{Name: "roles", SingularName: "role", Kind: "Role", Namespaced: true},
	}},
	{"example.com", "v1alpha1", []metav1.APIResource{
		{Name: "widgets", SingularName: "widget", Kind: "Widget", ShortNames: []string{"wg"}, Namespaced: true},
	}},
	{"a.io", "v1", []metav1.APIResource{
		{Name: "deployments", SingularName: "deployment", Kind: "Deployment", ShortNames: []string{"deploy"}, Namespaced: true},
		{Name: "aaas", SingularName: "aaa", Kind: "ConfigMap", ShortNames: []string{"cm", "po"}, Namespaced: true},
	}},
}

// TestResolveResourceAsRESTMapper: ResolveResource names the resource
// kubectl's own resolution names (client-go's DiscoveryRESTMapper behind
// its ShortcutExpander, as kubectl builds them from discovery) for every
// way a person types one: plural, singular, kind, short name,
// resource.group and resource.version.group, where a CRD collides with a
// built-in, and where nothing matches.
func TestResolveResourceAsRESTMapper(t *testing.T) {
	var all []Resource
	var groups []*restmapper.APIGroupResources
	fake := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}
	for _, g := range servedGroups {
		gv := schema.GroupVersion{Group: g.group, Version: g.version}.String()
		agr := &restmapper.APIGroupResources{
			Group:              metav1.APIGroup{Name: g.group, Versions: []metav1.GroupVersionForDiscovery{{GroupVersion: gv, Version: g.version}}, PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: gv, Version: g.version}},
			VersionedResources: map[string][]metav1.APIResource{g.version: g.resources},
		}
		groups = append(groups, agr)
		fake.Resources = append(fake.Resources, &metav1.APIResourceList{GroupVersion: gv, APIResources: g.resources})
		for _, r := range g.resources {
			all = append(all, Resource{Group: g.group, Version: g.version, Name: r.Name, Namespaced: r.Namespaced, Kind: r.Kind,
				SingularName: r.SingularName, ShortNames: r.ShortNames, Priority: len(all)})
		}
	}
	mapper := restmapper.NewShortcutExpander(restmapper.NewDiscoveryRESTMapper(groups), fake, func(string) {})
	kubectl := func(typed string) (schema.GroupVersionResource, error) {
		// kubectl's resource builder: schema.ParseResourceArg, then the
		// mapper on the fully specified form, else on the group resource.
		fq, gr := schema.ParseResourceArg(strings.ToLower(typed))
		if fq != nil {
			if gvr, err := mapper.ResourceFor(*fq); err == nil {
				return gvr, nil
			}
		}
		return mapper.ResourceFor(gr.WithVersion(""))
	}
	for _, typed := range []string{
		"pods", "pod", "Pod", "po", "configmaps", "cm", "ConfigMap", "configmap",
		"events", "ev", "event", "events.events.k8s.io", "events.v1.events.k8s.io",
		"deployments", "deploy", "Deployment", "deployments.apps", "deployments.v1.apps", "deployment.apps",
		"deployments.a.io", "aaas", "aaa", "sts", "statefulset", "ns", "namespace", "sa",
		"roles", "clusterrole", "roles.rbac.authorization.k8s.io", "widgets", "wg", "Widget", "widgets.v1alpha1.example.com",
		"frobnicators", "pods.v1", "deployments.v2.apps",
	} {
		t.Run(typed, func(t *testing.T) {
			want, wantErr := kubectl(typed)
			got, err := ResolveResource(all, typed)
			if wantErr != nil {
				require.Error(t, err, "kubectl finds nothing: %v", wantErr)
				return
			}
			require.NoError(t, err, "kubectl finds %s", want)
			assert.Equal(t, want.Group, got.Group, "group")
			assert.Equal(t, want.Resource, got.Name, "resource")
			assert.Equal(t, want.Version, got.Version, "version")
		})
	}
}
