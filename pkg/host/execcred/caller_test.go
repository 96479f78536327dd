package execcred

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFromEnvironment: under a client runtime that sets no
// KUBERNETES_EXEC_INFO (Node.js: @kubernetes/client-node), a value of the
// variable came from the exec entry and is ignored (an attack: a cluster of
// the entry's choosing, to pass --allowed-server), and the run is a
// credential-plugin run all the same; under any other parent the variable
// is read as kubectl and the Python client set it.
func TestFromEnvironment(t *testing.T) {
	const forged = `{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":true,"cluster":{"server":"https://allowed.example.com"}}}`
	tests := []struct {
		name, parent, execInfo string
		wantByClient           bool
		wantCluster            bool
		wantInteractive        bool
	}{
		{name: "kubectl sets it", parent: "/usr/local/bin/kubectl", execInfo: forged, wantByClient: true, wantCluster: true, wantInteractive: true},
		{name: "python sets it", parent: "/usr/bin/python3.13", execInfo: forged, wantByClient: true, wantCluster: true, wantInteractive: true},
		{name: "a shell, none set: a person", parent: "/usr/bin/bash"},
		{name: "node, none set", parent: "/usr/bin/node", wantByClient: true},
		{name: "node, set by the entry: ignored", parent: "/home/u/.nvm/versions/node/v20.20.2/bin/node", execInfo: forged, wantByClient: true},
		{name: "nodejs, set by the entry: ignored", parent: "/usr/bin/nodejs", execInfo: forged, wantByClient: true},
		{name: "node.exe", parent: `C:\Program Files\nodejs\node.exe`, wantByClient: true},
		{name: "a versioned node (Fedora)", parent: "/usr/bin/node-22", wantByClient: true},
		{name: "a versioned node", parent: "/usr/bin/node22", wantByClient: true},
		{name: "bun", parent: "/home/u/.bun/bin/bun", wantByClient: true},
		{name: "deno", parent: "/usr/local/bin/deno", wantByClient: true},
		{name: "node's command name (its exe unreadable)", parent: "node", wantByClient: true},
		{name: "a program whose name starts with node", parent: "/usr/bin/nodemon"},
		{name: "a versioned python", parent: "/usr/bin/python3.13"},
		{name: "unknown parent (another user's), none set", parent: ""},
		{name: "a program named like node is not node", parent: "/usr/bin/node-exporter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string {
				if k == EnvExecInfo {
					return tt.execInfo
				}
				return ""
			}
			parent := func() string { return tt.parent }
			req, err := FromEnvironment(getenv, parent)
			require.NoError(t, err)
			assert.Equal(t, tt.wantByClient, req.FromKubectl)
			assert.Equal(t, tt.wantByClient, RunByClient(getenv, parent))
			assert.Equal(t, tt.wantCluster, req.Cluster != nil)
			assert.Equal(t, tt.wantInteractive, req.Interactive)
			assert.Equal(t, APIVersionV1, req.APIVersion)
		})
	}
}

// TestParentExecutable: this test's parent is go test's, or whatever ran
// the test binary: a readable executable that is not Node.js.
func TestParentExecutable(t *testing.T) {
	if _, err := os.Stat("/proc/self/exe"); err != nil {
		t.Skip("no /proc")
	}
	exe := ParentExecutable()
	assert.NotEmpty(t, exe)
	assert.False(t, IsClientRuntime(exe), exe)
	if _, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", os.Getppid())); err == nil {
		assert.True(t, filepath.IsAbs(exe), "the parent's executable, not its command name: %s", exe)
	}
}
