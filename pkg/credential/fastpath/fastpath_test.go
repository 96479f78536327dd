package fastpath

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDispatch(t *testing.T) {
	for _, tc := range []struct {
		name     string
		argv0    string
		args     []string
		wantArgs []string
		wantFull bool
	}{
		{"own name: get-token flags", "/usr/local/bin/kubectl-impersonate-get_token", []string{"--oidc-issuer-url=x"}, []string{"--oidc-issuer-url=x"}, false},
		{"own name, no flags", "kubectl-impersonate-get_token", nil, nil, false},
		{"Krew link: get-token", "/home/u/.krew/bin/kubectl-impersonate", []string{"get-token", "--profile=a"}, []string{"--profile=a"}, false},
		{"Krew link: another command", "/home/u/.krew/bin/kubectl-impersonate", []string{"whoami", "-o", "json"}, nil, true},
		{"Krew link: no command (help)", "/home/u/.krew/bin/kubectl-impersonate", nil, nil, true},
		{"Krew link: a flag first is not get-token", "/home/u/.krew/bin/kubectl-impersonate", []string{"--help"}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args, full, err := Dispatch(tc.argv0, tc.args)
			require.NoError(t, err)
			assert.Equal(t, tc.wantArgs, args)
			assert.Equal(t, tc.wantFull, full)
		})
	}
}

// TestDispatchRefusesTheAPIServerName: the full binary hands claims and
// proxy to kubectl-impersonate-apiserver; the fast binary under that name
// would hand them back, forever.
func TestDispatchRefusesTheAPIServerName(t *testing.T) {
	_, _, err := Dispatch("/usr/local/bin/kubectl-impersonate-apiserver", []string{"claims"})
	assert.ErrorContains(t, err, "is the fast get-token binary under the name of kubectl-impersonate-apiserver")
}
