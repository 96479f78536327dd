package authz

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
)

func TestListValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "namespace", args: []string{"-n", "a"}},
		{name: "project", args: []string{"--project-label=project=a", "--verb=get", "--verb=delete", "-o", "wide"}},
		{name: "-A and project", args: []string{"-A", "--project-label=project=a"}, wantErr: "give -A or --project-label, not both"},
		{name: "-n and -A", args: []string{"-A", "-n", "a"}, wantErr: "-n selects one namespace"},
		{name: "project label without value", args: []string{"--project-label=project"}, wantErr: "is not KEY=VALUE"},
		{name: "project label selector", args: []string{"--project-label=a=b,c=d"}, wantErr: "is not KEY=VALUE"},
		{name: "comma-separated verbs, as in access", args: []string{"--verb=get,list"}},
		{name: "an empty verb", args: []string{"--verb=get,"}, wantErr: "is not a verb"},
		{name: "a space in a verb", args: []string{"--verb=get list"}, wantErr: "is not a verb"},
		{name: "token identity and --as", args: []string{"--token-identity", "--as=bob"}, wantErr: "not both"},
		{name: "bad method", args: []string{"--method=guess"}, wantErr: `--method "guess"`},
		{name: "bad output", args: []string{"-o", "table"}, wantErr: `--output "table"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, o := newCmdList(&cmdutil.GlobalOptions{}, genericiooptions.NewTestIOStreamsDiscard())
			require.NoError(t, cmd.ParseFlags(tc.args))
			err := o.ValidateFlags()
			if tc.wantErr == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tc.wantErr)
			}
		})
	}
}
