package serve

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/kubecode"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/kubecode/fake"
)

// TestProxyCommand: proxy's command line, as kubectl-impersonate-apiserver
// runs it: each refusal names what is wrong before anything is served, and
// a valid line reaches kube-apiserver's code (the kubecode seam) as the
// configuration it says, defaults included.
func TestProxyCommand(t *testing.T) {
	valid := []string{"--tls-cert-file=c.pem", "--tls-private-key-file=k.pem", "--oidc-issuer-url=https://idp.example.com",
		"--oidc-client-id=kubernetes", "--upstream-kubeconfig=up.kubeconfig"}
	with := func(extra ...string) []string { return append(append([]string{}, valid...), extra...) }
	without := func(drop string) []string {
		var out []string
		for _, a := range valid {
			if a != drop {
				out = append(out, a)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		args []string
		err  string
		want func(t *testing.T, c kubecode.ProxyConfig)
	}{
		{name: "no serving certificate", args: without("--tls-cert-file=c.pem"), err: "--tls-cert-file and --tls-private-key-file are required"},
		{name: "no issuer", args: without("--oidc-issuer-url=https://idp.example.com"), err: "give --oidc-issuer-url"},
		{name: "no audience", args: without("--oidc-client-id=kubernetes"), err: "--oidc-client-id is required"},
		{name: "no credential of its own", args: without("--upstream-kubeconfig=up.kubeconfig"), err: "exactly one of --in-cluster and --upstream-kubeconfig"},
		{name: "two credentials", args: with("--in-cluster"), err: "exactly one of --in-cluster and --upstream-kubeconfig"},
		{name: "a configuration and flags", args: with("--authentication-config=authn.yaml"), err: "--authentication-config excludes the --oidc-* flags"},
		{name: "a negative cache TTL", args: with("--token-cache-ttl=-1s"), err: "--token-cache-ttl must not be negative"},
		{name: "no upstream timeout", args: with("--upstream-timeout=0s"), err: "--upstream-timeout must be positive"},
		{name: "an unknown impersonation mode", args: with("--caller-impersonation-mode=open"), err: `--caller-impersonation-mode "open" is not one of`},
		{name: "the defaults", args: valid, want: func(t *testing.T, c kubecode.ProxyConfig) {
			assert.Equal(t, ":8443", c.Listen)
			assert.Equal(t, "up.kubeconfig", c.UpstreamKubeconfig)
			assert.Equal(t, 60*time.Second, c.UpstreamTimeout)
			assert.Equal(t, kubecode.DefaultProxyCacheTTL, c.CacheTTL)
			assert.Equal(t, kubecode.DefaultMaxInFlight, c.MaxInFlight)
			assert.Equal(t, kubecode.CallerImpersonationAuto, c.CallerImpersonationMode)
			assert.Equal(t, "-", c.AuditLog, "audit to stderr")
			assert.False(t, c.AllowCallerImpersonation, "callers' Impersonate-* headers refused")
			assert.False(t, c.AllowSystemIdentities, "system: identities refused")
		}},
		{name: "no cache, no in-flight limit", args: with("--token-cache-ttl=0", "--max-requests-inflight=0"), want: func(t *testing.T, c kubecode.ProxyConfig) {
			assert.Equal(t, time.Duration(-1), c.CacheTTL, "every request authenticated")
			assert.Equal(t, -1, c.MaxInFlight, "no limit")
		}},
		{name: "kube-apiserver's flag names", args: with("--oidc-audience=other", "--username-claim=email"), want: func(t *testing.T, c kubecode.ProxyConfig) {
			assert.Contains(t, c.Authentication.OIDC.ClientIDs, "other")
			assert.Equal(t, "email", c.Authentication.OIDC.UsernameClaim)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code := &fake.Code{Serve: func(context.Context, kubecode.ProxyConfig) error { return nil }}
			errOut, err := execute(NewCmdProxy, code, tc.args)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.Empty(t, code.Served, "nothing served")
				return
			}
			require.NoError(t, err, errOut)
			require.Len(t, code.Served, 1)
			tc.want(t, code.Served[0])
		})
	}
}

// execute runs the command newCmd builds on args, with code as
// kube-apiserver's, as kubectl-impersonate-apiserver runs it: its stderr and
// error.
func execute(newCmd func(*cmdutil.GlobalOptions, genericiooptions.IOStreams) *cobra.Command, code *fake.Code,
	args []string) (string, error) {
	var errOut bytes.Buffer
	cmd := newCmd(cmdutil.NewGlobalOptions(code, nil),
		genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &bytes.Buffer{}, ErrOut: &errOut})
	cmd.SetArgs(args)
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&errOut)
	cmd.SilenceUsage = true
	err := cmd.ExecuteContext(context.Background())
	return errOut.String(), err
}
