//go:build unix

package safefile

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
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
