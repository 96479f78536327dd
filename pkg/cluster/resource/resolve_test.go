package resource

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLooksLikeVersion(t *testing.T) {
	for s, want := range map[string]bool{"v1": true, "v10": true, "v2beta1": true, "v1alpha3": true, "v1beta": false, "v0": false,
		"v": false, "apps": false, "vx1": false, "v1gamma1": false, "k8s.io": false} {
		assert.Equal(t, want, looksLikeVersion(s), s)
	}
}

func TestResolveResource(t *testing.T) {
	all := []Resource{
		{Version: "v1", Name: "configmaps", SingularName: "configmap", Kind: "ConfigMap", ShortNames: []string{"cm"}, Namespaced: true},
		{Version: "v1", Name: "events", SingularName: "event", Kind: "Event", ShortNames: []string{"ev"}, Namespaced: true},
		{Group: "events.k8s.io", Version: "v1", Name: "events", SingularName: "event", Kind: "Event", ShortNames: []string{"ev"}, Namespaced: true},
		{Group: "apps", Version: "v1", Name: "deployments", SingularName: "deployment", Kind: "Deployment", ShortNames: []string{"deploy"}, Namespaced: true},
		{Group: "apps", Version: "v1", Name: "deployments/scale", Namespaced: true},
	}
	for _, tc := range []struct{ typed, wantGroup, wantName, wantErr string }{
		{typed: "configmaps", wantName: "configmaps"},
		{typed: "cm", wantName: "configmaps"},
		{typed: "ConfigMap", wantName: "configmaps"},
		{typed: "deploy", wantGroup: "apps", wantName: "deployments"},
		{typed: "deployments.apps", wantGroup: "apps", wantName: "deployments"},
		{typed: "events", wantName: "events"},
		{typed: "events.events.k8s.io", wantGroup: "events.k8s.io", wantName: "events"},
		{typed: "deployments/scale", wantErr: "does not serve"},
		{typed: "widgets", wantErr: `does not serve a resource "widgets"`},
	} {
		t.Run(tc.typed, func(t *testing.T) {
			r, err := ResolveResource(all, tc.typed)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantGroup, r.Group)
			assert.Equal(t, tc.wantName, r.Name)
		})
	}
}
