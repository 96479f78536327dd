package proxy

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"runtime"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/sudo"
)

// liveGrants are n live grants and their requests, one namespace each,
// alice's the first.
func liveGrants(n int) ([]elevation.Grant, []elevation.Request) {
	var gs []elevation.Grant
	var rs []elevation.Request
	for i := range n {
		g, r := sudoPair(time.Now(), time.Hour)
		ns := fmt.Sprintf("team-%04d", i)
		g.Namespace, r.Namespace = ns, ns
		if i > 0 {
			who := fmt.Sprintf("user-%04d@example.com", i)
			g.Spec.Requester, r.Spec.Requester = who, who
		}
		gs, rs = append(gs, g), append(rs, r)
	}
	return gs, rs
}

// BenchmarkProxySudo is the proxy's own cost per request (authentication
// from the cache, no network upstream): as today, with 1,000 live grants
// watched (a request without one), and a request under one of them, and
// under the one grant of a view holding no other (what the 999 others
// cost it). hack/bench-sudo.sh runs it side by side and writes the table
// into docs/elevation.md.
func BenchmarkProxySudo(b *testing.B) {
	u, _ := url.Parse("https://upstream.invalid")
	alice := &user.DefaultInfo{Name: "alice@example.com", UID: "sub-1", Groups: []string{"dev"}}
	auth := authenticator.TokenFunc(func(context.Context, string) (*authenticator.Response, bool, error) {
		return &authenticator.Response{User: alice}, true, nil
	})
	store, one := sudo.NewStore(), sudo.NewStore()
	store.Load(liveGrants(1000))
	one.Load(liveGrants(1))
	for _, bc := range []struct {
		name     string
		sudo     Elevator
		elevated bool
	}{
		{"today", nil, false},
		{"1000-grants-plain", store, false},
		{"1000-grants-elevated", store, true},
		{"1-grant-elevated", one, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := &Handler{Upstream: u, Transport: noopRT{}, Authenticator: auth, Sudo: bc.sudo}
			req := httptest.NewRequest("GET", "/api/v1/namespaces/team-0000/pods", nil)
			req.Header.Set("Authorization", "Bearer t")
			if bc.elevated {
				for k, v := range sudoHeaders("alice@example.com", "team-0000/sudo-x") {
					req.Header.Set(k, v)
				}
			}
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req.Clone(req.Context()))
				if rec.Code != 200 {
					b.Fatalf("code %d: %s", rec.Code, rec.Body)
				}
			}
		})
	}
}

// BenchmarkSudoStoreMemory reports the heap a replica's view holds per
// live grant (with its request), loaded 1,000 at a time.
func BenchmarkSudoStoreMemory(b *testing.B) {
	gs, rs := liveGrants(1000)
	var perGrant float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := sudo.NewStore()
		s.Load(gs, rs)
		runtime.GC()
		runtime.ReadMemStats(&after)
		perGrant = float64(after.HeapAlloc-before.HeapAlloc) / 1000
		runtime.KeepAlive(s)
	}
	b.ReportMetric(perGrant, "B/grant")
}
