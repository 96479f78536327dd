//go:build windows

package safefile

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"
)

// systemOwned: on Windows SYSTEM's and the Administrators' files count as
// the user's own (as Win32-OpenSSH judges).
const systemOwned = ""

// groupWriteCache: Windows has no group of the file: a write ACE for any
// other SID (BUILTIN\Users here) is anyone's.
const groupWriteCache = "writable by others"

// otherUser is a SID of another local account.
const otherUser = "S-1-5-21-1111111111-2222222222-3333333333-1001"

// envForeign names a directory the Wine harness planted as another Unix
// user's (hack/wine.sh): its "f" and "d" are judged in place of a file
// given away, since Wine 8.0 keeps no owner a program sets.
const envForeign = "KI_TEST_FOREIGN"

// The ways a planted file lets someone else in, made the Windows way: a
// protected DACL of the user's with one more ACE (for Everyone: Wine 8.0
// keeps a DACL as Unix mode bits, so that another user's SID is dropped
// and Everyone stands for "others"), or another owner.
func makePrivate(t *testing.T, path string) string      { return setDACL(t, path, "") }
func letOthersRead(t *testing.T, path string) string    { return setDACL(t, path, "(A;;FR;;;WD)") }
func letGroupWrite(t *testing.T, path string) string    { return setDACL(t, path, "(A;;FW;;;WD)") }
func letEveryoneWrite(t *testing.T, path string) string { return setDACL(t, path, "(A;;FA;;;WD)") }

func setDACL(t *testing.T, path, extra string) string {
	t.Helper()
	s, err := wellKnown()
	require.NoError(t, err)
	sd, err := windows.SecurityDescriptorFromString("D:P(A;;FA;;;" + s.user.String() + ")(A;;FA;;;SY)(A;;FA;;;BA)" + extra)
	require.NoError(t, err)
	require.NoError(t, SetSecurity(path, sd))
	return path
}

// giveAway makes another account the owner of path, or, where the
// platform keeps no owner a program sets (Wine), returns the harness's
// file of another user of the same kind ("f" or "d").
func giveAway(t *testing.T, path string) string {
	t.Helper()
	sid, err := windows.StringToSid(otherUser)
	require.NoError(t, err)
	require.NoError(t, windows.SetNamedSecurityInfo(path, windows.SE_FILE_OBJECT,
		windows.OWNER_SECURITY_INFORMATION, sid, nil, nil, nil))
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION)
	require.NoError(t, err)
	if owner, _, err := sd.Owner(); err == nil && owner.Equals(sid) {
		return path
	}
	foreign := os.Getenv(envForeign)
	if foreign == "" {
		t.Skipf("this platform keeps no owner a program sets (Wine 8.0), and $%s names no other user's files", envForeign)
	}
	return filepath.Join(foreign, filepath.Base(path))
}

// canPlantLinks: a symlink made and seen as one. Windows takes a privilege
// (or developer mode) to make one; Wine 8.0 makes none (CreateSymbolicLinkW
// is a stub that succeeds) and follows the host's: there the no-follow
// open is reviewed, not run (docs/security.md).
func canPlantLinks(t *testing.T) bool {
	dir := testDir(t)
	link := filepath.Join(dir, "probe")
	err := os.Symlink(filepath.Join(dir, "x"), link)
	if fi, lerr := os.Lstat(link); err != nil || lerr != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Skipf("this account or platform makes no symlinks (%v)", err)
	}
	return true
}

// testDir is a directory of the test's, removed after it file by file:
// Wine 8.0 lacks a call Go's os.RemoveAll (so t.TempDir's clean-up) makes.
func testDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "safefile-test-")
	require.NoError(t, err)
	t.Cleanup(func() {
		var paths []string
		_ = filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
			paths = append(paths, p)
			return nil
		})
		slices.Reverse(paths)
		for _, p := range paths {
			_ = os.Remove(p)
		}
	})
	return dir
}
