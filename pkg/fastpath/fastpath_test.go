package fastpath

import (
	"os"
	"path/filepath"
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
			args, full := Dispatch(tc.argv0, tc.args)
			assert.Equal(t, tc.wantArgs, args)
			assert.Equal(t, tc.wantFull, full)
		})
	}
}

func TestKrewLink(t *testing.T) {
	root := t.TempDir()
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	store := filepath.Join(root, "store", "impersonate", "v1.2.3")
	require.NoError(t, os.MkdirAll(store, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "bin"), 0o755))
	fast := filepath.Join(store, exe(BinaryName))
	require.NoError(t, os.WriteFile(fast, nil, 0o755))
	link := filepath.Join(root, "bin", exe(FullBinaryName))
	require.NoError(t, os.Symlink(fast, link))
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "KREW_ROOT" {
				return v
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name     string
		full     string
		krewRoot string
		wantLink string
	}{
		{"from Krew's store", filepath.Join(store, exe(FullBinaryName)), root, link},
		{"another plugin's store", filepath.Join(root, "store", "impersonatex", "v1", exe(FullBinaryName)), root, ""},
		{"go install", "/root/go/bin/" + exe(FullBinaryName), root, ""},
		{"another Krew root", filepath.Join(store, exe(FullBinaryName)), t.TempDir(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := KrewLink(tc.full, env(tc.krewRoot))
			assert.Equal(t, tc.wantLink, got)
			assert.Equal(t, tc.wantLink != "", ok)
		})
	}
}
