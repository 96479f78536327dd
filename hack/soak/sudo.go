package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// The sudo part of the soak (issue 58): every grantEvery the admin makes
// a grantSeconds grant of the role sudoRole in team-a for user 0, as
// deploy/sudo's admission allows (the request as user 0, the approval and
// the grant as admin); a share of the load is user 0's requests under one
// of the grants made in the last 100 s, live or ended. Every answer is
// checked against the grant's end: served (200) only if sent before it,
// refused ("expired at") only if answered after it.
const (
	grantEvery   = 20 * time.Second
	grantSeconds = 60
	sudoRole     = "soak-secrets"
	sudoUser     = "soak-0@example.com"
	grantExtra   = "kubectl-impersonate.io/sudo-grant"
)

// grant is one grant the run made.
type grant struct {
	name         string
	created, end time.Time
}

// sudoRun makes grants and checks what was served under them.
type sudoRun struct {
	api, adminToken string
	client          *http.Client

	mu     sync.Mutex
	grants []grant
	// served: allowed before the end; expired: refused after it;
	// violations: served after the end, or refused as ended before it.
	served, expired int
	violations      []string
}

// call sends one request to kube-apiserver as admin (as user when set),
// and decodes its answer into out.
func (s *sudoRun) call(ctx context.Context, method, path, as string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, s.api+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.adminToken)
	req.Header.Set("Content-Type", "application/json")
	if as != "" {
		req.Header.Set("Impersonate-User", as)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return json.Unmarshal(body, out)
}

// makeGrant asks, approves and starts one grant.
func (s *sudoRun) makeGrant(ctx context.Context) error {
	const base = "/apis/sudo.kubectl-impersonate.io/v1alpha1/namespaces/team-a/"
	spec := map[string]any{"requester": sudoUser, "role": sudoRole, "durationSeconds": grantSeconds,
		"reason": "soak", "ticket": "SOAK"}
	var r struct {
		Metadata struct{ Name, UID string } `json:"metadata"`
	}
	var obj map[string]any
	if err := s.call(ctx, http.MethodPost, base+"sudorequests", sudoUser, map[string]any{
		"apiVersion": "sudo.kubectl-impersonate.io/v1alpha1", "kind": "SudoRequest",
		"metadata": map[string]any{"generateName": "soak-"}, "spec": spec}, &obj); err != nil {
		return err
	}
	b, _ := json.Marshal(obj)
	_ = json.Unmarshal(b, &r)
	obj["status"] = map[string]any{"approvedBy": "admin"}
	if err := s.call(ctx, http.MethodPut, base+"sudorequests/"+r.Metadata.Name+"/status", "", obj, &obj); err != nil {
		return err
	}
	gspec := map[string]any{"request": r.Metadata.Name, "requestUID": r.Metadata.UID, "approver": "admin"}
	for k, v := range spec {
		gspec[k] = v
	}
	var g struct {
		Metadata struct {
			CreationTimestamp time.Time `json:"creationTimestamp"`
		} `json:"metadata"`
	}
	if err := s.call(ctx, http.MethodPost, base+"sudogrants", "", map[string]any{
		"apiVersion": "sudo.kubectl-impersonate.io/v1alpha1", "kind": "SudoGrant",
		"metadata": map[string]any{"name": r.Metadata.Name}, "spec": gspec}, &g); err != nil {
		return err
	}
	s.mu.Lock()
	s.grants = append(s.grants, grant{name: r.Metadata.Name, created: g.Metadata.CreationTimestamp,
		end: g.Metadata.CreationTimestamp.Add(grantSeconds * time.Second)})
	s.mu.Unlock()
	return nil
}

// pick is the n-th of the grants made 2 to 100 s ago (the proxy has seen
// them; some have ended), false when there is none yet.
func (s *sudoRun) pick(n int) (grant, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	var recent []grant
	for _, g := range s.grants {
		if age := now.Sub(g.created); age >= 2*time.Second && age <= 100*time.Second {
			recent = append(recent, g)
		}
	}
	if len(recent) == 0 {
		return grant{}, false
	}
	return recent[n%len(recent)], true
}

// header is the impersonation that asks for g.
func (g grant) header(h http.Header) {
	h.Set("Impersonate-User", sudoUser)
	h.Set("Impersonate-Extra-"+url.PathEscape(grantExtra), "team-a/"+g.name)
}

// judge records an answer under g sent at sent, answered at got: false
// when it is an error the run counts (anything but served or refused as
// ended).
func (s *sudoRun) judge(g grant, sent, got time.Time, code int, body string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case code == http.StatusOK && sent.Before(g.end):
		s.served++
	case code == http.StatusOK:
		s.violations = append(s.violations, fmt.Sprintf("%s served though sent %s after its end",
			g.name, sent.Sub(g.end).Round(time.Millisecond)))
	case code == http.StatusForbidden && strings.Contains(body, "expired at") && !got.Before(g.end):
		s.expired++
	case code == http.StatusForbidden && strings.Contains(body, "expired at"):
		s.violations = append(s.violations, fmt.Sprintf("%s refused as ended %s before its end", g.name,
			g.end.Sub(got).Round(time.Millisecond)))
	default:
		return false
	}
	return true
}

// counts are the totals so far.
func (s *sudoRun) counts() (grants, served, expired, violations int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.grants), s.served, s.expired, len(s.violations)
}
