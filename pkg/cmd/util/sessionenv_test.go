package util

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestSessionEnvKnowsTheProcess: every session the commands start knows
// the process it runs in (session.Process): a nil Getenv would mean "no
// environment" to the login, which would then see neither SSH nor a
// display, and the command line and kubeconfig name the context to log in
// to.
func TestSessionEnvKnowsTheProcess(t *testing.T) {
	g := NewGlobalOptions(nil, []string{"get-token", "--oidc-issuer-url=https://idp.example.com"})
	g.Getenv = func(k string) string { return map[string]string{"SSH_CONNECTION": "10.0.0.1 22 10.0.0.2 22"}[k] }
	for _, mode := range []SessionMode{{}, {Interactive: true}, {Person: true}, {Interactive: true, Person: true}} {
		env := g.SessionEnv(genericiooptions.NewTestIOStreamsDiscard(), mode)
		if assert.NotNil(t, env.Process.Getenv, "%+v", mode) {
			assert.Equal(t, "10.0.0.1 22 10.0.0.2 22", env.Process.Getenv("SSH_CONNECTION"), "the commands' environment, %+v", mode)
		}
		assert.Equal(t, g.Args(), env.Process.Args, "%+v", mode)
		assert.NotNil(t, env.Process.Kubeconfig, "%+v", mode)
	}
}
