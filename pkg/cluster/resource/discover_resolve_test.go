package resource

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cachedDiscovery answers from "the cache" until invalidated, then from
// "the server"; it counts the answers.
type cachedDiscovery struct {
	cache, server []Resource
	cacheErr      error
	serverErr     error
	fromCache     bool // the next answer comes from the cache
	alwaysCached  bool // Invalidate says the answer was cached and does nothing (a hostile cache)
	answers       []string
}

func (d *cachedDiscovery) Discover(context.Context, bool) ([]Resource, error) {
	if d.fromCache {
		d.answers = append(d.answers, "cache")
		return d.cache, d.cacheErr
	}
	d.answers = append(d.answers, "server")
	return d.server, d.serverErr
}

func (d *cachedDiscovery) Invalidate() bool {
	if d.alwaysCached {
		return true
	}
	was := d.fromCache
	d.fromCache = false
	return was
}

// TestResolve: discovery's one retry, as kubectl's cached discovery: a
// miss in an answer from the cache asks the server once; a miss in the
// server's own answer does not ask again; an outright failure is a
// DiscoveryError, a partial one a warning.
func TestResolve(t *testing.T) {
	pods := Resource{Name: "pods", Version: "v1", Namespaced: true, Verbs: []string{"list"}}
	widgets := Resource{Group: "example.com", Version: "v1", Name: "widgets", Namespaced: true, Verbs: []string{"list"}}
	down := errors.New("connection refused")
	partial := &PartialDiscoveryError{Failed: []string{"metrics.k8s.io/v1beta1 (503)"}}
	for _, tc := range []struct {
		name     string
		d        *cachedDiscovery
		typed    string
		want     string
		err      string
		answers  []string
		warnings int
	}{
		{"found in the cache", &cachedDiscovery{cache: []Resource{pods, widgets}, fromCache: true}, "pods", "pods", "", []string{"cache"}, 0},
		{"a CRD created since the cache was written", &cachedDiscovery{cache: []Resource{pods}, server: []Resource{pods, widgets}, fromCache: true},
			"widgets", "widgets.example.com", "", []string{"cache", "server"}, 0},
		{"not served, asked the server once", &cachedDiscovery{cache: []Resource{pods}, server: []Resource{pods}, fromCache: true},
			"gadgets", "", `"gadgets"`, []string{"cache", "server"}, 0},
		{"a miss in the server's own answer: not asked again", &cachedDiscovery{server: []Resource{pods}}, "gadgets", "", `"gadgets"`, []string{"server"}, 0},
		{"a cache that claims every answer: still one retry", &cachedDiscovery{cache: []Resource{pods}, server: []Resource{pods},
			fromCache: true, alwaysCached: true}, "gadgets", "", `"gadgets"`, []string{"cache", "cache"}, 0},
		{"discovery down", &cachedDiscovery{serverErr: down}, "pods", "", "connection refused", []string{"server"}, 0},
		{"one group down: a warning", &cachedDiscovery{server: []Resource{pods}, serverErr: partial}, "pods", "pods", "", []string{"server"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var warnings []string
			got, err := Resolve(context.Background(), tc.d, false, func(s string) { warnings = append(warnings, s) }, func(all []Resource) (Resource, error) {
				return ResolveResource(all, tc.typed)
			})
			assert.Equal(t, tc.answers, tc.d.answers, "discovery's answers")
			assert.Len(t, warnings, tc.warnings)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				var failed *DiscoveryError
				assert.Equal(t, tc.d.serverErr == down, errors.As(err, &failed), "a DiscoveryError only for a failed discovery")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, fmt.Sprint(got))
		})
	}
}
