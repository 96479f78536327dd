//go:build unix

package safefile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// systemOwned is Rule.Check's answer for root's file under a rule that
// wants the user's own.
const systemOwned = "belongs to another user"

// The ways a planted file lets someone else in, made the Unix way: mode
// bits and the owner's uid.
func makePrivate(t *testing.T, path string) string      { return chmod(t, path, 0o600, 0o700) }
func letOthersRead(t *testing.T, path string) string    { return chmod(t, path, 0o644, 0o755) }
func letGroupWrite(t *testing.T, path string) string    { return chmod(t, path, 0o660, 0o770) }
func letEveryoneWrite(t *testing.T, path string) string { return chmod(t, path, 0o606, 0o707) }

func chmod(t *testing.T, path string, file, dir os.FileMode) string {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	mode := file
	if fi.IsDir() {
		mode = dir
	}
	require.NoError(t, os.Chmod(path, mode))
	return path
}

// giveAway makes path another user's (nobody's): root only.
func giveAway(t *testing.T, path string) string {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("giving a file to another user takes root (the e2e tests plant them as a second local user)")
	}
	require.NoError(t, os.Chown(path, 65534, 65534))
	return path
}

// canPlantLinks: Unix users may make symlinks.
func canPlantLinks(*testing.T) bool { return true }

// groupWriteCache: kubectl writes its discovery cache 0660, which the
// Cache rule accepts on Unix.
const groupWriteCache = ""

// testDir is a directory of the test's, removed after it.
func testDir(t *testing.T) string { return t.TempDir() }

// TestWriteReportsAFailedWrite: a write that fails (the file size limit,
// as a full disk would) is an error, the file keeps its old content and no
// temporary file is left (issue 46: a failed write hidden by a successful
// close passed). SIGXFSZ is ignored by the Go runtime: the write fails
// with EFBIG.
func TestWriteReportsAFailedWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(p, []byte("old"), 0o600))
	var old unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_FSIZE, &old))
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: 1024, Max: old.Max}))
	err := Write(p, bytes.Repeat([]byte("a"), 4096), Options{})
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_FSIZE, &old))
	require.Error(t, err)
	b, rerr := os.ReadFile(p)
	require.NoError(t, rerr)
	assert.Equal(t, "old", string(b))
	entries, rerr := os.ReadDir(dir)
	require.NoError(t, rerr)
	assert.Len(t, entries, 1, "no temporary file left")
}
