package safefile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPlantedFiles: a file or directory another user could use, made the
// platform's way (platform_*_test.go: mode bits and uid on Unix, owner SID
// and DACL on Windows), is judged as Rule.Check's table says, on the
// descriptor read (ReadRegular) and on a directory's path (CheckDir). Run
// on Linux and, under Wine, on Windows.
func TestPlantedFiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		// plant lets someone else in and returns the path to judge
		plant func(*testing.T, string) string
		// substrings of the refusal per rule, "" for accepted
		private, secret, issued, cache string
	}{
		{"the user's alone", makePrivate, "", "", "", ""},
		{"others may read", letOthersRead, "", "readable by others", "", ""},
		{"a group may write", letGroupWrite, "writable by others", "writable by others", "writable by others", groupWriteCache},
		{"everyone may write", letEveryoneWrite, "writable by others", "writable by others", "writable by others", "writable by others"},
		{"another user's", giveAway, "belongs to another user", "belongs to another user", "belongs to another user", "belongs to another user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testDir(t)
			file, sub := filepath.Join(dir, "f"), filepath.Join(dir, "d")
			require.NoError(t, os.WriteFile(file, []byte("x"), 0o600))
			require.NoError(t, os.Mkdir(sub, 0o700))
			makePrivate(t, file)
			makePrivate(t, sub)
			file, sub = tc.plant(t, file), tc.plant(t, sub)
			for _, r := range []struct {
				rule Rule
				want string
			}{{Private, tc.private}, {Secret, tc.secret}, {Issued, tc.issued}, {Cache, tc.cache}} {
				b, _, err := ReadRegular("test file", file, 10, ReadOptions{Rule: r.rule})
				derr := CheckDir("test dir", sub, false, r.rule)
				if r.want == "" {
					assert.NoError(t, err, "file, rule %d", r.rule)
					assert.Equal(t, "x", string(b))
					assert.NoError(t, derr, "directory, rule %d", r.rule)
				} else {
					assert.ErrorContains(t, err, r.want, "file, rule %d", r.rule)
					assert.Nil(t, b, "nothing read from a refused file")
					assert.ErrorContains(t, derr, r.want, "directory, rule %d", r.rule)
				}
			}
		})
	}
}

// TestCreatedPrivate: what the plugin creates is the user's alone, even in
// a directory that lets others in (Unix: the mode as given, whatever the
// umask; Windows: an explicit protected DACL, not the one the directory
// hands down).
func TestCreatedPrivate(t *testing.T) {
	parent := testDir(t)
	letOthersRead(t, parent)
	letEveryoneWrite(t, parent)
	dir := filepath.Join(parent, "cache", "tokens")
	require.NoError(t, MkdirPrivate(dir))
	require.NoError(t, CheckDir("cache dir", dir, false, Secret))
	file := filepath.Join(dir, "entry.json")
	require.NoError(t, Write(file, []byte("token"), Options{Mode: 0o600, Sync: true}))
	b, a, err := ReadRegular("entry", file, 64, ReadOptions{NoFollow: true, Rule: Secret})
	require.NoError(t, err)
	assert.Equal(t, "token", string(b))
	assert.Equal(t, OwnerSelf, a.Owner)

	// A file written in the open parent is private too.
	open := filepath.Join(parent, "profiles.yaml")
	require.NoError(t, Write(open, []byte("p"), Options{Mode: 0o600}))
	_, _, err = ReadRegular("profiles", open, 64, ReadOptions{Rule: Secret})
	assert.NoError(t, err)

	// An existing directory is left as it is, and judged.
	require.NoError(t, MkdirPrivate(parent))
	assert.ErrorContains(t, CheckDir("parent", parent, false, Private), "writable by others")
}

// TestNoFollow: a link planted where a file of the plugin's should be is
// refused with NoFollow and followed without.
func TestNoFollow(t *testing.T) {
	if !canPlantLinks(t) {
		return
	}
	dir := testDir(t)
	target := filepath.Join(dir, "target")
	require.NoError(t, os.WriteFile(target, []byte("x"), 0o600))
	makePrivate(t, target)
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(target, link))
	_, _, err := ReadRegular("entry", link, 10, ReadOptions{NoFollow: true, Rule: Secret})
	assert.Error(t, err, "a symlink is refused")
	b, _, err := ReadRegular("entry", link, 10, ReadOptions{Rule: Secret})
	require.NoError(t, err, "followed without NoFollow")
	assert.Equal(t, "x", string(b))

	sub := filepath.Join(dir, "sub")
	require.NoError(t, MkdirPrivate(sub))
	dlink := filepath.Join(dir, "dlink")
	require.NoError(t, os.Symlink(sub, dlink))
	assert.ErrorContains(t, CheckDir("cache dir", dlink, false, Private), "is not a directory", "not followed")
	assert.NoError(t, CheckDir("cache dir", dlink, true, Private), "followed")
}

// TestOpenAppend: the recording's open (issue 56): a new file is the
// user's alone in a folder that lets others in, an existing one is
// appended to; a planted link (symbolic or hard), a file others may read
// or another user's are refused, and nothing is written to them.
func TestOpenAppend(t *testing.T) {
	parent := testDir(t)
	letOthersRead(t, parent)
	file := filepath.Join(parent, "rec.jsonl")
	for _, line := range []string{"one\n", "two\n"} {
		f, err := OpenAppend("the recording", file)
		require.NoError(t, err)
		_, err = f.WriteString(line)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	b, a, err := ReadRegular("the recording", file, 64, ReadOptions{NoFollow: true, Rule: Secret})
	require.NoError(t, err, "created private, whatever the folder hands down")
	assert.Equal(t, "one\ntwo\n", string(b))
	assert.Equal(t, OwnerSelf, a.Owner)

	for _, tc := range []struct {
		name string
		// plant lets someone else in and returns the path to open.
		plant func(t *testing.T, path string) string
		want  string
	}{
		{"others may read", letOthersRead, "readable by others"},
		{"another user's", giveAway, "belongs to another user"},
		{"a symbolic link", func(t *testing.T, p string) string {
			if !canPlantLinks(t) {
				t.Skip("no symbolic links here")
			}
			victim := p + ".victim"
			require.NoError(t, os.WriteFile(victim, []byte("x"), 0o600))
			makePrivate(t, victim)
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Symlink(victim, p))
			return p
		}, "is a symbolic link"},
		{"a hard link", func(t *testing.T, p string) string {
			require.NoError(t, os.Link(p, p+".other"))
			return p
		}, "has 2 names"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testDir(t)
			p := filepath.Join(dir, "f") // under Wine, giveAway gives the harness's other user's "f"
			require.NoError(t, os.WriteFile(p, []byte("x"), 0o600))
			makePrivate(t, p)
			p = tc.plant(t, p)
			before, _ := os.ReadFile(p)
			f, err := OpenAppend("the recording", p)
			if f != nil {
				f.Close()
			}
			assert.ErrorContains(t, err, tc.want)
			after, _ := os.ReadFile(p)
			assert.Equal(t, before, after, "nothing written")
		})
	}
}
