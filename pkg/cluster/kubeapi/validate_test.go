package kubeapi

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCheckLabels: what kube-apiserver stores passes, what it refuses is
// refused in one bounded line.
func TestCheckLabels(t *testing.T) {
	for _, tt := range []struct {
		name    string
		labels  map[string]string
		wantErr string
	}{
		{"none", nil, ""},
		{"kubernetes' own", map[string]string{"app.kubernetes.io/name": "api", "kubernetes.io/metadata.name": "kube-system", "empty": ""}, ""},
		{"a 63-byte value", map[string]string{"v": strings.Repeat("a", 63)}, ""},
		{"a 64-byte value", map[string]string{"v": strings.Repeat("a", 64)}, "not a label value"},
		{"100 kB", map[string]string{"pad": strings.Repeat("p", 100_000)}, "not a label value"},
		{"an escape sequence", map[string]string{"v": "\x1b[2J"}, "not a label value"},
		{"a key with a space", map[string]string{"a b": "c"}, "not a qualified name"},
		{"a key of 100 kB", map[string]string{strings.Repeat("k", 100_000): "c"}, "not a qualified name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckLabels(tt.labels)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			if assert.ErrorContains(t, err, tt.wantErr) {
				assert.Less(t, len(err.Error()), 200, "bounded")
				assert.NotContains(t, err.Error(), "\x1b")
			}
		})
	}
}

// TestCheckResourceList: every name of every resource is checked, not the
// first alone: a list whose first names are plain and a later one is not
// is refused, whichever of the resource's lists holds it.
func TestCheckResourceList(t *testing.T) {
	ok := metav1.APIResource{Name: "widgets", SingularName: "widget", Kind: "Widget", Group: "x.example", Version: "v1",
		Verbs: []string{"get", "list"}, ShortNames: []string{"wd", "wdg"}, Categories: []string{"all", "x"}}
	bad := func(f func(r *metav1.APIResource)) metav1.APIResource {
		r := ok
		r.Verbs, r.ShortNames, r.Categories = slices.Clone(ok.Verbs), slices.Clone(ok.ShortNames), slices.Clone(ok.Categories)
		f(&r)
		return r
	}
	for _, tt := range []struct {
		name    string
		gv      string
		list    metav1.APIResourceList
		wantErr string
	}{
		{name: "plain", gv: "x.example/v1", list: metav1.APIResourceList{GroupVersion: "x.example/v1", APIResources: []metav1.APIResource{ok, ok}}},
		{name: "no group version said", gv: "x.example/v1", list: metav1.APIResourceList{APIResources: []metav1.APIResource{ok}}},
		{name: "another group version's", gv: "x.example/v1", list: metav1.APIResourceList{GroupVersion: "y.example/v1"}, wantErr: `say they are "y.example/v1"'s`},
		{name: "a later resource", gv: "x.example/v1", list: metav1.APIResourceList{APIResources: []metav1.APIResource{ok, bad(func(r *metav1.APIResource) { r.Name = "../x" })}}, wantErr: `resource "../x"`},
		{name: "a subresource", gv: "v1", list: metav1.APIResourceList{APIResources: []metav1.APIResource{bad(func(r *metav1.APIResource) { r.Name = "pods/../../x" })}}, wantErr: `resource "pods/../../x"`},
		{name: "a singular name", gv: "v1", list: metav1.APIResourceList{APIResources: []metav1.APIResource{bad(func(r *metav1.APIResource) { r.SingularName = "a b" })}}, wantErr: `singular name "a b"`},
		{name: "a kind", gv: "v1", list: metav1.APIResourceList{APIResources: []metav1.APIResource{bad(func(r *metav1.APIResource) { r.Kind = "W\x1b" })}}, wantErr: "kind"},
		{name: "a group", gv: "v1", list: metav1.APIResourceList{APIResources: []metav1.APIResource{bad(func(r *metav1.APIResource) { r.Group = "../g" })}}, wantErr: `group "../g"`},
		{name: "a version after a plain group", gv: "v1", list: metav1.APIResourceList{APIResources: []metav1.APIResource{bad(func(r *metav1.APIResource) { r.Version = "v1/../x" })}}, wantErr: `version "v1/../x"`},
		{name: "a later verb", gv: "v1", list: metav1.APIResourceList{APIResources: []metav1.APIResource{bad(func(r *metav1.APIResource) { r.Verbs = append(r.Verbs, "../x") })}}, wantErr: `verb "../x"`},
		{name: "a later short name", gv: "v1", list: metav1.APIResourceList{APIResources: []metav1.APIResource{bad(func(r *metav1.APIResource) { r.ShortNames = append(r.ShortNames, "a b") })}}, wantErr: `short name "a b"`},
		{name: "a later category", gv: "v1", list: metav1.APIResourceList{APIResources: []metav1.APIResource{bad(func(r *metav1.APIResource) { r.Categories = append(r.Categories, "a\nb") })}}, wantErr: "category"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := checkResourceList(tt.gv, &tt.list)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.wantErr)
		})
	}
}
