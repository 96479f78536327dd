//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testissuer"
)

// claimsCase is one token against one configuration of the test issuer's
// jwt authenticator.
type claimsCase struct {
	name   string
	claims map[string]any // merged over a valid token's
	life   time.Duration  // 0: 10 minutes
}

// TestClaimsDifferential: the structured kube-apiserver reloads its
// AuthenticationConfiguration when the file changes. For each of several
// configurations of a test issuer (claims with prefixes, CEL username,
// groups, uid and extra, claim and user validation rules, two audiences),
// tokens with awkward claims (spaces and unicode, numbers, booleans,
// nested objects, missing and unverified email) go to `claims --compare`,
// which must agree with SelfSubjectReview, refusals (401) included.
func TestClaimsDifferential(t *testing.T) {
	api := st.api["structured"]
	is, err := testissuer.Start()
	require.NoError(t, err)
	defer is.Close()
	original, err := os.ReadFile(st.authConfig)
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.WriteFile(st.authConfig, original, 0o600) })
	var base map[string]any
	require.NoError(t, json.Unmarshal(original, &base))

	issuer := map[string]any{"url": is.URL, "audiences": []string{"claims-diff"}, "certificateAuthority": string(is.CAPEM())}
	configs := []struct {
		name string
		jwt  map[string]any
	}{
		{"claims with prefixes", map[string]any{"claimMappings": map[string]any{
			"username": map[string]any{"claim": "sub", "prefix": "c1:"}, "groups": map[string]any{"claim": "groups", "prefix": "g1:"}}}},
		{"email without prefix", map[string]any{"claimMappings": map[string]any{
			"username": map[string]any{"claim": "email", "prefix": ""}, "groups": map[string]any{"claim": "groups", "prefix": ""}}}},
		{"CEL username, groups, uid, extra", map[string]any{"claimMappings": map[string]any{
			"username": map[string]any{"expression": `"c3:" + claims.sub + "/" + (has(claims.tenant) ? string(claims.tenant) : "none")`},
			"groups":   map[string]any{"expression": `has(claims.groups) ? dyn(claims.groups).map(g, "x:" + string(g)) : []`},
			"uid":      map[string]any{"expression": `claims.sub`},
			"extra": []any{map[string]any{"key": "example.com/tenant", "valueExpression": `has(claims.tenant) ? string(claims.tenant) : ""`},
				map[string]any{"key": "example.com/nested", "valueExpression": `has(claims.org) && has(claims.org.team) ? claims.org.team : ""`}}}}},
		{"claim and user validation rules", map[string]any{
			"claimValidationRules": []any{map[string]any{"claim": "hd", "requiredValue": "example.com"},
				map[string]any{"expression": `claims.exp - claims.iat <= 3600`, "message": "tokens live at most an hour"}},
			"claimMappings":       map[string]any{"username": map[string]any{"claim": "sub", "prefix": "c4:"}},
			"userValidationRules": []any{map[string]any{"expression": `!user.username.contains("admin")`, "message": "no admins"}}}},
		{"two audiences, MatchAny", map[string]any{"issuerAudiences": []string{"claims-diff", "other-app"}, "claimMappings": map[string]any{
			"username": map[string]any{"claim": "sub", "prefix": "c5:"}}}},
	}
	dir := t.TempDir()
	total, agreed, refusedBoth := 0, 0, 0
	for ci, cfg := range configs {
		j := map[string]any{"issuer": issuer}
		for k, v := range cfg.jwt {
			if k == "issuerAudiences" {
				iss := map[string]any{}
				for k, v := range issuer {
					iss[k] = v
				}
				iss["audiences"], iss["audienceMatchPolicy"] = v, "MatchAny"
				j["issuer"] = iss
				continue
			}
			j[k] = v
		}
		doc := map[string]any{}
		for k, v := range base {
			doc[k] = v
		}
		doc["jwt"] = append(append([]any{}, base["jwt"].([]any)...), j)
		b, err := json.Marshal(doc)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(st.authConfig, b, 0o600))
		cfgFile := filepath.Join(dir, fmt.Sprintf("config-%d.json", ci))
		require.NoError(t, os.WriteFile(cfgFile, b, 0o600))

		// Wait (bounded) until kube-apiserver has loaded this configuration:
		// a canary token maps as the configuration says.
		canary := mintFor(t, is, claimsCase{name: "canary", claims: map[string]any{"sub": fmt.Sprintf("canary-%d", ci), "hd": "example.com"}})
		loaded := false
		for range 150 {
			r := claimsCompare(t, api, canary, "--authentication-config="+cfgFile)
			if r.code == 0 {
				loaded = true
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		require.True(t, loaded, "%s: kube-apiserver did not load the configuration within 30 s", cfg.name)

		for _, c := range claimsCases {
			tok := mintFor(t, is, c)
			total++
			agree, refused := comparePair(t, api, cfg.name, c.name, tok, "--authentication-config="+cfgFile)
			if agree {
				agreed++
			}
			if agree && refused {
				refusedBoth++
			}
		}
	}
	t.Logf("claims differential: %d configurations × %d tokens = %d pairs; %d agree with SelfSubjectReview (%d refused by both)", len(configs), len(claimsCases), total, agreed, refusedBoth)
	assert.Equal(t, 5*11, total, "docs/testing.md's 5 configurations × 11 tokens")
	assert.Equal(t, total, agreed)
	assert.Positive(t, refusedBoth, "some pairs are refusals")
	assert.Less(t, refusedBoth, total, "some pairs are accepted")
}

func mintFor(t *testing.T, is *testissuer.Issuer, c claimsCase) string {
	t.Helper()
	life := c.life
	if life == 0 {
		life = 10 * time.Minute
	}
	claims := is.Claims("user-1", "claims-diff", life, map[string]any{"email": "user@example.com", "email_verified": true})
	for k, v := range c.claims {
		if v == nil {
			delete(claims, k)
			continue
		}
		claims[k] = v
	}
	raw, err := is.Mint(claims, testissuer.Valid)
	require.NoError(t, err)
	return raw
}

// claimsCases are the tokens every configuration is asked about.
var claimsCases = []claimsCase{
	{name: "plain", claims: map[string]any{"groups": []any{"dev", "ops"}}},
	{name: "spaces and unicode", claims: map[string]any{"sub": "Zoë Ünïcode user", "groups": []any{"dev team", "Ωmega", " lead"}}},
	{name: "numbers, booleans, nested", claims: map[string]any{"tenant": 42, "admin": true, "org": map[string]any{"team": "blue", "size": 7}, "groups": []any{"a"}}},
	{name: "groups as a string", claims: map[string]any{"groups": "solo"}},
	{name: "no groups claim", claims: map[string]any{"groups": nil}},
	{name: "unverified email", claims: map[string]any{"email": "eve@example.com", "email_verified": false}},
	{name: "email without email_verified", claims: map[string]any{"email": "nov@example.com", "email_verified": nil}},
	{name: "hd present", claims: map[string]any{"hd": "example.com", "sub": "with-hd"}},
	{name: "an admin, long-lived", claims: map[string]any{"hd": "example.com", "sub": "super-admin"}, life: 2 * time.Hour},
	{name: "other audience", claims: map[string]any{"aud": "other-app"}},
	{name: "tenant as a string", claims: map[string]any{"tenant": "acme", "hd": "example.com", "groups": []any{"acme-admins"}}},
}

// claimsCompare runs `claims --compare -o json` with the token as both the
// input and the credential of the SelfSubjectReview.
func claimsCompare(t *testing.T, api *apiserver, token string, rules ...string) result {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token), 0o600))
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kc, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, certificate-authority: %q}}]
users: [{name: u, user: {tokenFile: %q}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, api.url, st.caFile, tokenFile)), 0o600))
	return run(t, baseEnv(t.TempDir()), false, append([]string{st.ki, "claims", "--compare", "-o", "json", "--kubeconfig=" + kc,
		"--token-file=" + tokenFile}, rules...)...)
}

// comparePair runs claims --compare for one token and reports whether the
// prediction agrees with SelfSubjectReview, and whether both refused it.
func comparePair(t *testing.T, api *apiserver, cfg, tokenCase, token string, rules ...string) (agree, refused bool) {
	t.Helper()
	r := claimsCompare(t, api, token, rules...)
	var out struct {
		Predicted struct {
			Username string `json:"username"`
			Refused  string `json:"refused"`
		} `json:"predicted"`
		Server      *struct{ Username string } `json:"server"`
		Differences []string                   `json:"differences"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 0 || len(out.Differences) > 0 {
		t.Errorf("%s / %s: claims --compare disagrees with kube-apiserver (exit %d): %v %s", cfg, tokenCase, r.code, out.Differences, r.stderr)
		return false, false
	}
	return true, out.Predicted.Refused != ""
}

// TestClaimsDifferentialLegacyFlags: kube-apiserver's legacy --oidc-*
// flags cannot be reloaded, so each flag set is a kube-apiserver of its own
// (started together, own etcd prefix). The same tokens go to `claims
// --compare` with the same flags, which must agree with SelfSubjectReview.
func TestClaimsDifferentialLegacyFlags(t *testing.T) {
	is, err := testissuer.Start()
	require.NoError(t, err)
	defer is.Close()
	caFile := filepath.Join(t.TempDir(), "issuer-ca.pem")
	require.NoError(t, os.WriteFile(caFile, is.CAPEM(), 0o600))
	common := []string{"--oidc-issuer-url=" + is.URL, "--oidc-client-id=claims-diff", "--oidc-ca-file=" + caFile}
	flagSets := []struct {
		name  string
		flags []string
	}{
		// sub with no prefix flag: kube-apiserver's "<issuer>#" default.
		{"defaults (sub, <issuer># prefix)", []string{"--oidc-groups-claim=groups"}},
		{"email, group prefix, required hd", []string{"--oidc-username-claim=email", "--oidc-groups-claim=groups",
			"--oidc-groups-prefix=g:", "--oidc-required-claim=hd=example.com"}},
		{"sub without prefix, required tenant, RS256", []string{"--oidc-username-claim=sub", "--oidc-username-prefix=-",
			"--oidc-groups-claim=groups", "--oidc-groups-prefix=", "--oidc-required-claim=tenant=acme", "--oidc-signing-algs=RS256"}},
	}
	apis := make([]*apiserver, len(flagSets))
	for i, fs := range flagSets {
		a, cmd, err := st.startAPIServer(fmt.Sprintf("legacy-claims-%d", i), append(append([]string{}, common...), fs.flags...))
		require.NoError(t, err)
		t.Cleanup(func() { st.stopCmd(cmd) })
		apis[i] = a
	}
	for i, a := range apis {
		require.NoError(t, waitHTTP(a.url+"/readyz", http.Header{"Authorization": {"Bearer " + adminToken}}, 120*time.Second, st.tlsClient()),
			"%s: kube-apiserver did not become ready", flagSets[i].name)
	}
	total, agreed, refusedBoth := 0, 0, 0
	for i, fs := range flagSets {
		// claims takes kube-apiserver's flags as they are.
		rules := append(append([]string{}, common...), fs.flags...)
		for _, c := range claimsCases {
			total++
			agree, refused := comparePair(t, apis[i], fs.name, c.name, mintFor(t, is, c), rules...)
			if agree {
				agreed++
			}
			if agree && refused {
				refusedBoth++
			}
		}
	}
	t.Logf("claims differential, legacy flags: %d flag sets × %d tokens = %d pairs; %d agree with SelfSubjectReview (%d refused by both)",
		len(flagSets), len(claimsCases), total, agreed, refusedBoth)
	assert.Equal(t, 3*11, total, "docs/testing.md's 11 tokens against 3 kube-apiservers")
	assert.Equal(t, total, agreed)
	assert.Positive(t, refusedBoth, "some pairs are refusals")
	assert.Less(t, refusedBoth, total, "some pairs are accepted")
}
