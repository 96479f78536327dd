package sudo

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation"
	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
)

// request refuses, before anything is sent, what no policy could allow.
func TestRequestValidate(t *testing.T) {
	for _, tt := range []struct {
		name    string
		o       RequestOptions
		wantErr string
	}{
		{"complete", RequestOptions{Role: "edit", Reason: "INC-1", For: 30 * time.Minute}, ""},
		{"no role", RequestOptions{Reason: "INC-1", For: time.Hour}, "--role is required"},
		{"no reason", RequestOptions{Role: "edit", For: time.Hour}, "--reason is required"},
		{"under a minute", RequestOptions{Role: "edit", Reason: "r", For: 59 * time.Second}, "at least 1m"},
		{"a fraction of a second", RequestOptions{Role: "edit", Reason: "r", For: time.Minute + time.Millisecond}, "whole seconds"},
		{"a reason of two lines", RequestOptions{Role: "edit", Reason: "INC-1\nForged: x", For: time.Hour},
			"--reason and --ticket are one line each"},
		{"a ticket with a control character", RequestOptions{Role: "edit", Reason: "r", Ticket: "T\x1b[2J", For: time.Hour},
			"--reason and --ticket are one line each"},
	} {
		err := tt.o.Validate()
		if tt.wantErr == "" {
			assert.NoError(t, err, tt.name)
			continue
		}
		assert.ErrorContains(t, err, tt.wantErr, tt.name)
	}
}

func TestUntil(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	assert.Equal(t, "29m30s", until(now.Add(29*time.Minute+30*time.Second+200*time.Millisecond), now))
	assert.Equal(t, "ended", until(now, now))
	assert.Equal(t, "ended", until(now.Add(-time.Second), now))
}

// listAPI answers the lists of grants and requests, as the given user.
type listAPI struct {
	user     string
	grants   []elevation.Grant
	requests []elevation.Request
}

func (f *listAPI) Get(_ context.Context, path string, out any) error {
	var items any = map[string]any{"items": f.requests}
	if strings.HasSuffix(path, "/sudogrants") {
		items = map[string]any{"items": f.grants}
	}
	b, _ := json.Marshal(items)
	return json.Unmarshal(b, out)
}
func (f *listAPI) Post(context.Context, string, any, any) error { return errors.New("read only") }
func (f *listAPI) Put(context.Context, string, any, any) error  { return errors.New("read only") }
func (f *listAPI) WhoAmI(context.Context) (*authnv1.UserInfo, string, error) {
	return &authnv1.UserInfo{Username: f.user}, "", nil
}

// grantOf is an approved request of requester's and its grant, started at
// start for 30 minutes.
func grantOf(name, requester string, start time.Time) (elevation.Grant, elevation.Request) {
	r := elevation.Request{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "payments", UID: types.UID(name)},
		Spec:   elevation.RequestSpec{Requester: requester, Role: "edit", DurationSeconds: 1800, Reason: "r"},
		Status: &elevation.RequestStatus{ApprovedBy: "bob"}}
	g := elevation.Grant{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "payments",
		CreationTimestamp: metav1.NewTime(start)},
		Spec: elevation.GrantSpec{Request: name, RequestUID: name, Requester: requester, Role: "edit",
			DurationSeconds: 1800, Reason: "r", Approver: "bob"}}
	return g, r
}

// sudo -- COMMAND runs under the caller's one live grant, or the one
// --grant names; anything else is one clear line.
func TestRunPicksTheGrant(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	live, liveReq := grantOf("sudo-live", "alice", now.Add(-time.Minute))
	other, otherReq := grantOf("sudo-other", "alice", now.Add(-time.Minute))
	old, oldReq := grantOf("sudo-old", "alice", now.Add(-time.Hour))
	mallory, malloryReq := grantOf("sudo-m", "mallory", now.Add(-time.Minute))
	for _, c := range []struct {
		name   string
		grants []elevation.Grant
		flag   string
		want   string
		err    string
	}{
		{"the one live grant", []elevation.Grant{live, old, mallory}, "", "sudo-live", ""},
		{"none live", []elevation.Grant{old, mallory}, "", "", "no live grant of yours in payments: ask for one"},
		{"two live", []elevation.Grant{live, other}, "", "", "you hold 2 live grants in payments (sudo-live, " +
			"sudo-other): choose one with --grant"},
		{"--grant chooses", []elevation.Grant{live, other}, "sudo-other", "sudo-other", ""},
		{"--grant ended", []elevation.Grant{live, old}, "sudo-old", "", "grant sudo-old in payments does not " +
			"count: expired at 2026-11-29T11:30:00Z"},
		{"--grant someone else's", []elevation.Grant{live, mallory}, "sudo-m", "", "no grant sudo-m of yours"},
	} {
		t.Run(c.name, func(t *testing.T) {
			api := &listAPI{user: "alice", grants: c.grants,
				requests: []elevation.Request{liveReq, otherReq, oldReq, malloryReq}}
			o := &RunOptions{base: base{client: api, namespace: "payments"}, Grant: c.flag,
				now: func() time.Time { return now }}
			g, err := o.pick(context.Background())
			if c.err != "" {
				assert.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, g.Name)
		})
	}
}

// The command's kubeconfig is the current context alone, in the grant's
// namespace, its user impersonating itself with the grant's extra; other
// users' credentials stay out of it.
func TestRunKubeconfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters:
- {name: proxy, cluster: {server: "https://proxy:8443", certificate-authority: ca.crt}}
- {name: other, cluster: {server: "https://other"}}
users:
- name: alice
  user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: kubectl, args: [impersonate, get-token]}}
- {name: admin, user: {token: secret-admin-token}}
contexts:
- {name: prod, context: {cluster: proxy, user: alice, namespace: default}}
- {name: admin, context: {cluster: other, user: admin}}
current-context: admin
`), 0o600))
	g, _ := grantOf("sudo-live", "alice@example.com", time.Now())
	cmd := &cobra.Command{}
	o := &RunOptions{}
	o.bindRun(cmd, &cmdutil.GlobalOptions{Getenv: func(string) string { return "" }})
	require.NoError(t, cmd.Flags().Parse([]string{"--kubeconfig=" + path, "--context=prod",
		"--server=https://replica-2:8443"}))
	cfg, err := o.kubeconfig(&g)
	require.NoError(t, err)
	require.NoError(t, clientcmd.WriteToFile(*cfg, filepath.Join(dir, "out")))
	b, err := os.ReadFile(filepath.Join(dir, "out"))
	require.NoError(t, err)
	out := string(b)
	assert.NotContains(t, out, "secret-admin-token", "only the current context's user")
	assert.Contains(t, out, "server: https://replica-2:8443", "--server kept")
	assert.Contains(t, out, "certificate-authority: "+filepath.Join(dir, "ca.crt"), "paths absolute, as loaded")
	assert.Contains(t, out, "namespace: payments")
	assert.Contains(t, out, "as: alice@example.com")
	assert.Contains(t, out, "kubectl-impersonate.io/sudo-grant:\n      - payments/sudo-live")
	assert.Contains(t, out, "- get-token", "the credential plugin, not a token")
}

// sudo -- COMMAND and shell refuse the connection flags the command's
// kubeconfig would not keep: the grant would be checked on one cluster
// or identity, the command would use another.
func TestRunRefusesConnectionFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		err  string
	}{
		{[]string{"--context=prod", "--server=https://replica-2", "-n", "payments"}, ""},
		{[]string{"--user=admin"}, "--user is not kept"},
		{[]string{"--cluster=other"}, "--cluster is not kept"},
		{[]string{"--token=x"}, "--token is not kept"},
		{[]string{"--as=bob"}, "--as is not kept"},
		{[]string{"--certificate-authority=ca.crt"}, "--certificate-authority is not kept"},
	} {
		cmd := &cobra.Command{}
		o := &RunOptions{}
		o.bindRun(cmd, &cmdutil.GlobalOptions{Getenv: func(string) string { return "" }})
		require.NoError(t, cmd.Flags().Parse(c.args))
		err := o.Validate()
		if c.err == "" {
			assert.NoError(t, err, c.args)
			continue
		}
		assert.ErrorContains(t, err, c.err, c.args)
	}
}
