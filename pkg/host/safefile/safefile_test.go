package safefile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWrite(t *testing.T) {
	for _, tt := range []struct {
		name string
		mode os.FileMode
		sync bool
	}{
		{"a token: 0600, synced", 0o600, true},
		{"kubectl's cache: 0660, not synced", 0o660, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := testDir(t)
			path := filepath.Join(dir, "f.json")
			require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
			require.NoError(t, Write(path, []byte("new"), Options{Mode: tt.mode, Sync: tt.sync}))
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, "new", string(b))
			if runtime.GOOS != "windows" {
				fi, err := os.Stat(path)
				require.NoError(t, err)
				assert.Equal(t, tt.mode, fi.Mode().Perm(), "the mode as given, whatever the umask")
			}
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Len(t, entries, 1, "no temporary file left")
		})
	}
}

// A name that climbs out of the root, or a symlink on the way that points
// out of it, writes nothing outside.
func TestWriteInStaysInside(t *testing.T) {
	base := testDir(t)
	inside, outside := filepath.Join(base, "server"), filepath.Join(base, "other")
	require.NoError(t, os.MkdirAll(inside, 0o750))
	require.NoError(t, os.MkdirAll(outside, 0o750))
	require.NoError(t, os.Symlink(outside, filepath.Join(inside, "link")))
	root, err := os.OpenRoot(inside)
	require.NoError(t, err)
	defer root.Close()
	for _, name := range []string{"../other/x.json", "link/x.json", "/tmp/x.json"} {
		assert.Error(t, WriteIn(root, name, []byte("{}"), Options{Mode: 0o660}), name)
	}
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, entries)
	require.NoError(t, WriteIn(root, "ok.json", []byte("{}"), Options{Mode: 0o660}))
	assert.FileExists(t, filepath.Join(inside, "ok.json"))
}

// TestReadRegularLimit: a file of exactly the limit is read whole; one byte
// more is refused (ErrTooLarge), never cut to the limit.
func TestReadRegularLimit(t *testing.T) {
	dir := testDir(t)
	for _, tt := range []struct {
		size    int
		tooLong bool
	}{{0, false}, {1023, false}, {1024, false}, {1025, true}, {4096, true}} {
		p := filepath.Join(dir, fmt.Sprint(tt.size))
		require.NoError(t, os.WriteFile(p, bytes.Repeat([]byte("a"), tt.size), 0o600))
		b, _, err := ReadRegular("test file", p, 1024, ReadOptions{Rule: Private})
		if tt.tooLong {
			require.ErrorIs(t, err, ErrTooLarge, "%d bytes", tt.size)
			assert.Nil(t, b)
			continue
		}
		require.NoError(t, err, "%d bytes", tt.size)
		assert.Len(t, b, tt.size)
	}
}

// TestWriteKeepsTheMode: with Mode 0 a replaced regular file keeps its
// mode (a kuberc the user made readable stays so); a new file, or one
// replacing a symlink, is the user's alone.
func TestWriteKeepsTheMode(t *testing.T) {
	dir := testDir(t)
	kept := filepath.Join(dir, "kept")
	require.NoError(t, os.WriteFile(kept, []byte("old"), 0o600))
	require.NoError(t, os.Chmod(kept, 0o640))
	require.NoError(t, Write(kept, []byte("new"), Options{}))
	fresh := filepath.Join(dir, "fresh")
	require.NoError(t, Write(fresh, []byte("new"), Options{}))
	if runtime.GOOS == "windows" {
		return // no mode bits there: TestCreatedPrivate judges the DACL
	}
	for path, want := range map[string]os.FileMode{kept: 0o640, fresh: 0o600} {
		fi, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, want, fi.Mode().Perm(), path)
	}
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(kept, link))
	require.NoError(t, Write(link, []byte("new"), Options{}))
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular(), "the link replaced by a file")
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "not the link target's mode")
}
