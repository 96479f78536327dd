package serve

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/kubecode/fake"
)

// TestSudoControllerCommand: sudo-controller's command line as
// kubectl-impersonate-apiserver runs it: each refusal names what is wrong
// before anything runs, and a valid line reaches the kubecode seam as it says.
func TestSudoControllerCommand(t *testing.T) {
	tls := []string{"--authorization-webhook-listen=:8443", "--tls-cert-file=c.pem", "--tls-private-key-file=k.pem"}
	for _, tc := range []struct {
		name string
		args []string
		err  string
	}{
		{"no credential", nil, "exactly one of --in-cluster and --kubeconfig"},
		{"two credentials", []string{"--in-cluster", "--kubeconfig=c"}, "exactly one of --in-cluster and --kubeconfig"},
		{"no lease namespace", []string{"--in-cluster", "--lease-namespace="}, "--lease-namespace is required"},
		{"too short an interval", []string{"--in-cluster", "--interval=10ms"}, "--interval must be at least 100ms"},
		{"the webhook without a certificate", []string{"--in-cluster", "--authorization-webhook-listen=:8443"},
			"give --tls-cert-file and --tls-private-key-file"},
		{"the webhook without its key", []string{"--in-cluster", "--authorization-webhook-listen=:8443",
			"--tls-cert-file=c.pem"}, "give --tls-cert-file and --tls-private-key-file"},
		{"a certificate without the webhook", []string{"--in-cluster", "--tls-cert-file=c.pem"},
			"give --authorization-webhook-listen too"},
		{"a client CA without the webhook", []string{"--in-cluster", "--client-ca-file=ca.pem"},
			"give --authorization-webhook-listen too"},
		{"the controller alone", []string{"--in-cluster"}, ""},
		{"with the webhook", append([]string{"--kubeconfig=c", "--client-ca-file=ca.pem"}, tls...), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code := &fake.Code{}
			errOut, err := execute(NewCmdSudoController, code, tc.args)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.Empty(t, code.Controllers, "nothing run")
				return
			}
			require.NoError(t, err, errOut)
			require.Len(t, code.Controllers, 1)
			c := code.Controllers[0]
			if len(tc.args) > 1 {
				assert.Equal(t, ":8443", c.WebhookListen)
				assert.Equal(t, []string{"c.pem", "k.pem", "ca.pem"}, []string{c.CertFile, c.KeyFile, c.ClientCAFile})
			} else {
				assert.Empty(t, c.WebhookListen, "no webhook unless asked")
			}
		})
	}
}
