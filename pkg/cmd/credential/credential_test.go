package credential

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"

	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/session"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/settings"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/login"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokensource"
)

// The credential commands' Run, with fakes for what is outside this
// process: the token cache (fakeStore) and the provider (fakeProvider).
// The commands against real providers, keyrings and kubectl are
// pkg/cmd's binary tests and test/e2e; these check what Run does with the
// cache and the provider, and what it prints.

// fakeStore is the token cache in memory; it records the calls.
type fakeStore struct {
	mu      sync.Mutex
	entries map[string][]byte
	calls   []string
	getErr  error
}

func newFakeStore() *fakeStore { return &fakeStore{entries: map[string][]byte{}} }

func (f *fakeStore) record(call string) { f.mu.Lock(); f.calls = append(f.calls, call); f.mu.Unlock() }

func (f *fakeStore) Name() string { return "fake" }

func (f *fakeStore) Get(_ context.Context, id string) ([]byte, error) {
	f.record("get")
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.getErr != nil {
		return nil, f.getErr
	}
	b, ok := f.entries[id]
	if !ok {
		return nil, tokencache.ErrNotFound
	}
	return b, nil
}

func (f *fakeStore) Put(_ context.Context, id string, b []byte) error {
	f.record("put")
	f.mu.Lock()
	f.entries[id] = b
	f.mu.Unlock()
	return nil
}

func (f *fakeStore) Delete(_ context.Context, id string) error {
	f.record("delete")
	f.mu.Lock()
	delete(f.entries, id)
	f.mu.Unlock()
	return nil
}

func (f *fakeStore) DeleteAll(context.Context) error {
	f.record("delete-all")
	f.mu.Lock()
	clear(f.entries)
	f.mu.Unlock()
	return nil
}

func (f *fakeStore) callsSeen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// put caches e for a's identity.
func (f *fakeStore) put(t *testing.T, a *settings.AuthOptions, e *tokencache.Entry) {
	b, err := e.Encode()
	require.NoError(t, err)
	f.entries[a.Key().ID()] = b
}

// fakeProvider is the provider as the token source sees it.
type fakeProvider struct {
	grants, refreshes int
	grantErr          error
	subject           string
}

func (p *fakeProvider) Grant(context.Context) (*tokencache.Entry, error) {
	p.grants++
	if p.grantErr != nil {
		return nil, p.grantErr
	}
	return entryFor(p.subject, "granted", time.Hour), nil
}

func (p *fakeProvider) Refresh(context.Context, string) (*tokencache.Entry, error) {
	p.refreshes++
	return entryFor(p.subject, "refreshed", time.Hour), nil
}

// jwt is an unsigned token naming sub (what a cached ID token looks like
// to the commands, which read it only to say whose it is).
func jwt(sub, nonce string) string {
	enc := base64.RawURLEncoding.EncodeToString
	claims, _ := json.Marshal(map[string]string{"email": sub, "nonce": nonce})
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc(claims) + ".sig"
}

// entryFor is a cached entry for sub whose ID token expires in life.
func entryFor(sub, nonce string, life time.Duration) *tokencache.Entry {
	now := time.Now()
	return &tokencache.Entry{IDToken: jwt(sub, nonce), IDTokenExpiry: now.Add(life), AccessToken: "at-" + nonce,
		AccessTokenExpiry: now.Add(life), RefreshToken: "rt-" + nonce, ObtainedAt: now.Add(-time.Minute)}
}

// fakeSources builds the commands' token sources with settings' recipe
// over the fake cache and provider; built counts the provider's
// construction (a miss), sources the sources'.
type fakeSources struct {
	store    *fakeStore
	provider *fakeProvider
	built    int
	sources  int
	env      session.Env
}

func (f *fakeSources) new(a *settings.AuthOptions, env session.Env) (*tokensource.Source, error) {
	f.sources++
	f.env = env
	return a.Source(f.store, env.Notify, func() (tokensource.Authenticator, error) {
		f.built++
		return f.provider, nil
	}), nil
}

// failingSources fails the test if a source is built.
func failingSources(t *testing.T) session.Sources {
	return func(*settings.AuthOptions, session.Env) (*tokensource.Source, error) {
		t.Error("a token source was built")
		return nil, errors.New("no source in this test")
	}
}

// testEnv is a home of the test's, the environment kubectl gives the
// plugin there, and streams.
type testEnv struct {
	home   string
	env    map[string]string
	global *cmdutil.GlobalOptions
}

func newTestEnv(t *testing.T) *testEnv {
	home := t.TempDir()
	e := &testEnv{home: home, env: map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config")}}
	e.global = &cmdutil.GlobalOptions{Getenv: func(k string) string { return e.env[k] }, IsTerminal: func(any) bool { return false }}
	return e
}

// flags are get-token's flags of the tests' identity.
func (e *testEnv) flags(more ...string) []string {
	return append([]string{"--oidc-issuer-url=https://idp.example.com", "--oidc-client-id=kube",
		"--token-cache-storage=disk", "--token-cache-dir=" + filepath.Join(e.home, "cache")}, more...)
}

// settingsOf are the completed settings of flags, as the cache keys them.
func (e *testEnv) settingsOf(t *testing.T, flags []string) *settings.AuthOptions {
	a, err := settings.CheckArgs(flags, e.global.Getenv)
	require.NoError(t, err)
	return a
}

// parse sets the command's flags as cobra would.
func parse(t *testing.T, cmd *cobra.Command, args []string) {
	require.NoError(t, cmd.ParseFlags(args))
}

// failure asserts err says want and holds none of the tests' secrets
// (Execute prints it as one line).
func failure(t *testing.T, err error, want string) {
	t.Helper()
	require.Error(t, err)
	assert.Contains(t, err.Error(), want)
	for _, secret := range []string{"rt-", "at-", ".sig"} {
		assert.NotContains(t, err.Error(), secret)
	}
}

func TestGetTokenRun(t *testing.T) {
	for _, tt := range []struct {
		name string
		// cached is what the cache holds before (nil: nothing).
		cached   *tokencache.Entry
		provider fakeProvider
		// execInfo is KUBERNETES_EXEC_INFO.
		execInfo   string
		wantToken  string
		wantErr    string
		wantBuilt  int
		wantGrants int
		wantCalls  []string
	}{
		{name: "cache hit: no provider, no write", cached: entryFor("alice@example.com", "cached", time.Hour),
			wantToken: jwt("alice@example.com", "cached"), wantCalls: []string{"get"}},
		{name: "miss: logs in and caches", provider: fakeProvider{subject: "alice@example.com"},
			wantToken: jwt("alice@example.com", "granted"), wantBuilt: 1, wantGrants: 1, wantCalls: []string{"get", "get", "put"}},
		{name: "expiring: refreshed", cached: entryFor("alice@example.com", "cached", 10*time.Second), provider: fakeProvider{subject: "alice@example.com"},
			wantToken: jwt("alice@example.com", "refreshed"), wantBuilt: 1, wantCalls: []string{"get", "get", "put"}},
		{name: "miss, and the provider refuses: one line", provider: fakeProvider{grantErr: errors.New("invalid_client: the client secret\nis wrong")},
			wantErr: "invalid_client", wantBuilt: 1, wantGrants: 1, wantCalls: []string{"get", "get"}},
		{name: "miss, kubectl not interactive, the login needs a person: what to run",
			provider: fakeProvider{grantErr: login.ErrInteractionRequired},
			execInfo: `{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false}}`,
			wantErr:  "run 'kubectl impersonate login --oidc-client-id=kube --oidc-issuer-url=https://idp.example.com", wantBuilt: 1, wantGrants: 1, wantCalls: []string{"get", "get"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t)
			e.env["KUBERNETES_EXEC_INFO"] = tt.execInfo
			flags := e.flags()
			fake := &fakeSources{store: newFakeStore(), provider: &tt.provider}
			if tt.cached != nil {
				fake.store.put(t, e.settingsOf(t, flags), tt.cached)
			}
			streams, _, out, errOut := genericiooptions.NewTestIOStreams()
			o := &GetTokenOptions{Auth: settings.NewAuthOptions(), IOStreams: streams, global: e.global, sources: fake.new}
			cmd := newCmdGetToken(o)
			parse(t, cmd, flags)
			require.NoError(t, o.Complete(context.Background(), nil))
			require.NoError(t, o.Validate())
			err := o.Run(context.Background())
			assert.Equal(t, tt.wantBuilt, fake.built, "the provider is set up on a miss only")
			assert.Equal(t, tt.wantGrants, tt.provider.grants)
			assert.Equal(t, tt.wantCalls, fake.store.callsSeen())
			if tt.wantErr != "" {
				failure(t, err, tt.wantErr)
				assert.Empty(t, out.String(), "nothing for kubectl on stdout")
				return
			}
			require.NoError(t, err)
			var cred struct {
				APIVersion, Kind string
				Status           struct{ Token, ExpirationTimestamp string }
			}
			require.NoError(t, json.Unmarshal(out.Bytes(), &cred), out.String())
			assert.Equal(t, "ExecCredential", cred.Kind)
			assert.Equal(t, "client.authentication.k8s.io/v1", cred.APIVersion)
			assert.Equal(t, tt.wantToken, cred.Status.Token)
			assert.NotEmpty(t, cred.Status.ExpirationTimestamp)
			assert.Empty(t, errOut.String())
		})
	}
}

// TestGetTokenCompleteBuildsNothing: Complete and Validate, the part of a
// cached get-token before the cache is read, build no token source.
func TestGetTokenCompleteBuildsNothing(t *testing.T) {
	e := newTestEnv(t)
	streams := genericiooptions.NewTestIOStreamsDiscard()
	o := &GetTokenOptions{Auth: settings.NewAuthOptions(), IOStreams: streams, global: e.global, sources: failingSources(t)}
	cmd := newCmdGetToken(o)
	parse(t, cmd, e.flags())
	require.NoError(t, o.Complete(context.Background(), nil))
	require.NoError(t, o.Validate())
}

func TestLoginRun(t *testing.T) {
	for _, tt := range []struct {
		name       string
		cached     *tokencache.Entry
		force      bool
		provider   fakeProvider
		wantOut    string
		wantErr    string
		wantGrants int
	}{
		{name: "cache hit: already logged in", cached: entryFor("alice@example.com", "cached", time.Hour),
			wantOut: "Already logged in as alice@example.com; the token is valid until "},
		{name: "miss: logs in", provider: fakeProvider{subject: "bob@example.com"}, wantOut: "Logged in as bob@example.com; the token is valid until ", wantGrants: 1},
		{name: "--force: logs in over a valid token", cached: entryFor("alice@example.com", "cached", time.Hour), force: true,
			provider: fakeProvider{subject: "alice@example.com"}, wantOut: "Logged in as alice@example.com;", wantGrants: 1},
		{name: "the provider refuses: one line", provider: fakeProvider{grantErr: errors.New("access_denied:\nthe user said no")}, wantErr: "access_denied", wantGrants: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t)
			flags := e.flags()
			fake := &fakeSources{store: newFakeStore(), provider: &tt.provider}
			if tt.cached != nil {
				fake.store.put(t, e.settingsOf(t, flags), tt.cached)
			}
			streams, _, out, _ := genericiooptions.NewTestIOStreams()
			o := &LoginOptions{Auth: settings.NewAuthOptions(), IOStreams: streams, global: e.global, sources: fake.new}
			cmd := newCmdLogin(o)
			if tt.force {
				flags = append(flags, "--force")
			}
			parse(t, cmd, flags)
			require.NoError(t, o.Complete(context.Background(), nil))
			require.NoError(t, o.Validate())
			err := o.Run(context.Background())
			assert.Equal(t, tt.wantGrants, tt.provider.grants)
			assert.True(t, fake.env.Interactive && fake.env.Person, "a person runs login: interactive, whatever the cooldown")
			if tt.wantErr != "" {
				failure(t, err, tt.wantErr)
				assert.Empty(t, out.String())
				return
			}
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(out.String(), tt.wantOut), out.String())
			assert.Equal(t, 1, strings.Count(out.String(), "\n"), "one line")
			assert.NotContains(t, out.String(), ".sig", "never the token")
		})
	}
}

// kubeconfigOf writes a kubeconfig whose contexts' users run get-token with
// args (by context), and returns its path.
func kubeconfigOf(t *testing.T, e *testEnv, current string, args map[string][]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Config\ncurrent-context: %s\nclusters:\n", current)
	for _, name := range slices.Sorted(maps.Keys(args)) {
		fmt.Fprintf(&b, "- name: %s\n  cluster:\n    server: https://%s.example.com\n", name, name)
	}
	b.WriteString("contexts:\n")
	for _, name := range slices.Sorted(maps.Keys(args)) {
		fmt.Fprintf(&b, "- name: %s\n  context:\n    cluster: %s\n    user: %s\n", name, name, name)
	}
	b.WriteString("users:\n")
	for _, name := range slices.Sorted(maps.Keys(args)) {
		fmt.Fprintf(&b, "- name: %s\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: kubectl-impersonate-get_token\n      interactiveMode: IfAvailable\n      args:\n", name)
		for _, a := range args[name] {
			fmt.Fprintf(&b, "      - %q\n", a)
		}
	}
	path := filepath.Join(e.home, "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o600))
	return path
}

func TestLoginReadsTheContextsEntry(t *testing.T) {
	e := newTestEnv(t)
	flags := e.flags("--oidc-extra-scope=groups")
	kc := kubeconfigOf(t, e, "prod", map[string][]string{"prod": flags})
	fake := &fakeSources{store: newFakeStore(), provider: &fakeProvider{subject: "alice@example.com"}}
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	o := &LoginOptions{Auth: settings.NewAuthOptions(), IOStreams: streams, global: e.global, sources: fake.new}
	parse(t, newCmdLogin(o), []string{"--kubeconfig=" + kc})
	require.NoError(t, o.Complete(context.Background(), nil))
	require.NoError(t, o.Run(context.Background()))
	assert.Contains(t, out.String(), "Logged in as alice@example.com")
	_, cached := fake.store.entries[e.settingsOf(t, flags).Key().ID()]
	assert.True(t, cached, "the token is cached where the entry's get-token finds it")
}

func TestStatusRun(t *testing.T) {
	e := newTestEnv(t)
	fresh, renewing := e.flags(), e.flags("--oidc-extra-scope=renewing")
	expired, corrupt := e.flags("--oidc-extra-scope=expired"), e.flags("--oidc-extra-scope=corrupt")
	kc := kubeconfigOf(t, e, "fresh", map[string][]string{"fresh": fresh, "shared": fresh, "renewing": renewing, "expired": expired, "corrupt": corrupt, "none": e.flags("--oidc-extra-scope=none")})
	store := newFakeStore()
	store.put(t, e.settingsOf(t, fresh), entryFor("alice@example.com", "fresh", time.Hour))
	// Inside get-token's renewal margin: get-token would renew it, so it is
	// not valid (status once said it was).
	store.put(t, e.settingsOf(t, renewing), entryFor("alice@example.com", "renewing", 10*time.Second))
	store.put(t, e.settingsOf(t, expired), entryFor("alice@example.com", "expired", -time.Hour))
	store.entries[e.settingsOf(t, corrupt).Key().ID()] = []byte("{not json")
	var mu sync.Mutex // --parallel=2: the checker runs from two goroutines
	var checked []string
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	o := &StatusOptions{IOStreams: streams, global: e.global,
		store: func(*settings.AuthOptions) (tokencache.Store, error) { return store, nil },
		checker: func(ctx context.Context, s *session.Session) (*session.Check, error) {
			// The token a check sends comes through the gate.
			cfg, _, err := s.Gate(ctx, &rest.Config{Host: s.Server(), ExecProvider: s.Exec}, store)
			if err != nil {
				return nil, err
			}
			token := cfg.BearerToken
			mu.Lock()
			checked = append(checked, s.Context)
			mu.Unlock()
			if s.Context == "shared" {
				return nil, errors.New("the cluster\nsaid no")
			}
			return &session.Check{Username: session.Subject(token)}, nil
		}}
	parse(t, newCmdStatus(o), []string{"--kubeconfig=" + kc, "--check", "--parallel=2", "--timeout=1s", "-o", "json"})
	require.NoError(t, o.Complete(context.Background(), nil))
	require.NoError(t, o.Validate())
	require.NoError(t, o.Run(context.Background()))
	assert.ElementsMatch(t, []string{"fresh", "shared"}, checked, "only valid tokens are sent")
	var got struct{ Sessions []session.Status }
	require.NoError(t, json.Unmarshal(out.Bytes(), &got), out.String())
	rows := map[string]session.Status{}
	for _, r := range got.Sessions {
		rows[r.Context] = r
	}
	require.Len(t, rows, 6)
	assert.True(t, rows["fresh"].Valid && rows["fresh"].Current)
	assert.Equal(t, "alice@example.com", rows["fresh"].Identity)
	assert.Equal(t, []string{"shared"}, rows["fresh"].SharedWith)
	assert.Equal(t, "alice@example.com", rows["fresh"].Check.Username)
	assert.Equal(t, "the cluster said no", rows["shared"].Check.Error, "a failed check is one line")
	assert.True(t, rows["renewing"].LoggedIn && !rows["renewing"].Valid, "in the renewal margin: not valid, as get-token judges")
	assert.True(t, rows["expired"].LoggedIn && !rows["expired"].Valid && rows["expired"].RefreshToken)
	assert.False(t, rows["none"].LoggedIn)
	assert.Contains(t, rows["corrupt"].Error, "corrupted token cache entry")
	assert.NotContains(t, out.String(), ".sig", "never a token")
	assert.Empty(t, errOut.String())
	assert.NotContains(t, store.callsSeen(), "put", "status writes nothing")
	assert.NotContains(t, store.callsSeen(), "delete")
}

func TestLogoutRun(t *testing.T) {
	for _, tt := range []struct {
		name           string
		cached         bool
		noRevoke       bool
		revokeErr      error
		wantRevoked    []string
		wantOut        string
		wantErr        string
		wantRevocation string
	}{
		{name: "revoked and deleted", cached: true, wantRevoked: []string{"rt-cached", "at-cached"},
			wantOut: "Logged alice@example.com out of context prod (client \"kube\" at https://idp.example.com): tokens revoked at the provider and deleted.", wantRevocation: "revoked"},
		{name: "nothing cached", wantOut: "Logged the identity out of context prod", wantRevocation: "nothing cached"},
		{name: "--no-revoke", cached: true, noRevoke: true, wantOut: "tokens deleted, not revoked (--no-revoke)", wantRevocation: "skipped"},
		{name: "the provider fails: deleted anyway, one line", cached: true, revokeErr: errors.New("answered 503\nbusy"), wantRevoked: []string{"rt-cached"},
			wantErr: "the provider did not revoke the tokens of prod (the local copies are deleted)", wantRevocation: "failed: answered 503 busy"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t)
			flags := e.flags()
			kc := kubeconfigOf(t, e, "prod", map[string][]string{"prod": flags, "other": e.flags("--oidc-extra-scope=other")})
			store := newFakeStore()
			other := e.settingsOf(t, e.flags("--oidc-extra-scope=other"))
			store.put(t, other, entryFor("carol@example.com", "other", time.Hour))
			if tt.cached {
				store.put(t, e.settingsOf(t, flags), entryFor("alice@example.com", "cached", time.Hour))
			}
			var revoked []string
			streams, _, out, _ := genericiooptions.NewTestIOStreams()
			o := &LogoutOptions{Auth: settings.NewAuthOptions(), IOStreams: streams, global: e.global, store: store,
				revoker: func(_ context.Context, _ *settings.AuthOptions, token, _ string) error {
					revoked = append(revoked, token)
					return tt.revokeErr
				}}
			args := []string{"--kubeconfig=" + kc, "-o", "json"}
			if tt.noRevoke {
				args = append(args, "--no-revoke")
			}
			parse(t, newCmdLogout(o), args)
			require.NoError(t, o.Complete(context.Background(), nil))
			require.NoError(t, o.Validate())
			err := o.Run(context.Background())
			assert.Equal(t, tt.wantRevoked, revoked)
			assert.Len(t, store.entries, 1, "the identity's entry is deleted, whatever the revocation")
			assert.Contains(t, store.entries, other.Key().ID(), "another context's is kept")
			if tt.wantErr != "" {
				failure(t, err, tt.wantErr)
			} else {
				require.NoError(t, err)
			}
			var got struct{ Logouts []*LogoutResult }
			require.NoError(t, json.Unmarshal(out.Bytes(), &got), out.String())
			require.Len(t, got.Logouts, 1)
			assert.Equal(t, tt.wantRevocation, got.Logouts[0].Revocation)
			assert.True(t, got.Logouts[0].Deleted)
			var text strings.Builder
			o.print(&text, got.Logouts)
			assert.Contains(t, text.String(), tt.wantOut)
			assert.NotContains(t, out.String()+text.String(), ".sig", "never a token")
		})
	}
}
