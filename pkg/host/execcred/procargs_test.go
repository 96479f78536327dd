package execcred

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestParseProcArgs: macOS's kern.procargs2 layout, as the kernel writes
// it, and cut short anywhere.
func TestParseProcArgs(t *testing.T) {
	procargs := func(argc uint32, rest string) []byte {
		b := binary.LittleEndian.AppendUint32(nil, argc)
		return append(b, rest...)
	}
	full := procargs(2, "/usr/local/bin/kubectl\x00\x00\x00\x00kubectl\x00get\x00HOME=/Users/a\x00KUBERC=/x\x00\x00executable_path=/usr/local/bin/kubectl\x00")
	for _, tc := range []struct {
		name     string
		in       []byte
		wantPath string
		wantEnv  []string
		wantErr  string
	}{
		{"kubectl with two arguments", full, "/usr/local/bin/kubectl", []string{"HOME=/Users/a", "KUBERC=/x"}, ""},
		{"no environment", procargs(1, "/bin/sh\x00sh\x00\x00"), "/bin/sh", nil, ""},
		{"an empty argument", procargs(2, "/bin/sh\x00\x00sh\x00\x00A=b\x00\x00"), "/bin/sh", []string{"A=b"}, ""},
		{"nothing after the path", procargs(0, "/bin/sh\x00"), "/bin/sh", nil, ""},
		{"only padding after the path", procargs(0, "/bin/sh\x00\x00\x00"), "/bin/sh", nil, ""},
		{"arguments cut short", procargs(3, "/bin/sh\x00sh\x00"), "/bin/sh", nil, "arguments cut short"},
		{"no exec path", procargs(0, "/bin/sh"), "", nil, "no exec path"},
		{"argc alone", procargs(0, ""), "", nil, "no exec path"},
		{"too short", []byte{1, 0, 0}, "", nil, "too short"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, env, err := parseProcArgs(tc.in)
			if tc.wantErr == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tc.wantErr)
			}
			assert.Equal(t, tc.wantPath, path)
			assert.Equal(t, tc.wantEnv, env)
		})
	}
}
