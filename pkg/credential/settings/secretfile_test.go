package settings

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testfs"
)

// TestReadSecretFile: the client secret's and the password's files are
// read alike: the trailing line ending dropped and nothing else, empty
// refused, a FIFO or /dev/zero refused without waiting, a file others may
// read warned about.
func TestReadSecretFile(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), mode))
		require.NoError(t, os.Chmod(p, mode))
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	testfs.Mkfifo(t, fifo)
	for _, tt := range []struct {
		name, path, want, wantErr, wantWarn string
	}{
		{name: "newline dropped", path: file("nl", "s3cret\n", 0o600), want: "s3cret"},
		{name: "CRLF dropped", path: file("crlf", "s3cret\r\n", 0o600), want: "s3cret"},
		{name: "spaces are the secret's", path: file("sp", " pass word \n", 0o600), want: " pass word "},
		{name: "empty", path: file("empty", "\n", 0o600), wantErr: "is empty"},
		{name: "readable by others", path: file("open", "s3cret", 0o644), want: "s3cret", wantWarn: "readable by others: chmod 600"},
		{name: "a FIFO", path: fifo, wantErr: "is not a regular file"},
		{name: "/dev/zero", path: "/dev/zero", wantErr: "is not a regular file"},
		{name: "too large", path: file("big", string(make([]byte, 65<<10)), 0o600), wantErr: "larger than 64 KiB"},
		{name: "missing", path: filepath.Join(dir, "nope"), wantErr: "no such file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var warned string
			got, err := readSecretFile(os.Getenv, "password-file", "password", tt.path, func(s string) { warned = s })
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				assert.ErrorContains(t, err, "--password-file")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			if tt.wantWarn == "" {
				assert.Empty(t, warned)
			} else {
				assert.Contains(t, warned, tt.wantWarn)
			}
		})
	}
}
