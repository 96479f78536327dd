// Package safefile is the one atomic file write of the plugin.
//
//   - A file is written under a temporary name beside it and renamed into
//     place: a reader (kubectl, another plugin process) sees the old file
//     or the new one, never half of one.
//   - Writes go through an os.Root, so that a name (a discovery cache's
//     "group/version/...") cannot leave the directory it is written in,
//     not even through a symlink planted on the way.
package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// TempPrefix begins the name of the temporary files: ".tmp-NAME-N".
const TempPrefix = ".tmp-"

// Options are a write's mode and durability.
type Options struct {
	// Mode is the file's mode, set as given (not masked by the umask):
	// 0600 for tokens and profiles, kubectl's 0660 for its caches; 0
	// keeps the mode of the file replaced (0600 for a new one). On
	// Windows a mode that lets no one else in is a DACL of the user's
	// alone; any other keeps the DACL the directory hands down.
	Mode os.FileMode
	// Sync flushes the file to disk before the rename: what must survive
	// a crash (a refresh token, a profile). kubectl's discovery cache
	// does without, and so does this plugin's copy of it.
	Sync bool
}

// Write replaces path with b.
func Write(path string, b []byte, o Options) error {
	root, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() { _ = root.Close() }()
	if err := WriteIn(root, filepath.Base(path), b, o); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// WriteIn replaces name, a path relative to root that stays inside it,
// with b.
func WriteIn(root *os.Root, name string, b []byte, o Options) error {
	dir, base := filepath.Split(name)
	var f *os.File
	var tmp string
	var err error
	for range 100 { // O_EXCL: a name another writer holds is not taken
		tmp = filepath.Join(dir, TempPrefix+base+"-"+strconv.FormatUint(uint64(rand.Uint32()), 10))
		f, err = root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	defer func() { _ = root.Remove(tmp) }() // a no-op after the rename
	mode := o.Mode
	if mode == 0 { // the mode of the file replaced, else the user's alone
		mode = 0o600
		if fi, err := root.Lstat(name); err == nil && fi.Mode().IsRegular() {
			mode = fi.Mode().Perm()
		}
	}
	err = setPrivate(root, tmp, f, mode)
	if err == nil {
		_, err = f.Write(b)
	}
	if err == nil && o.Sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return root.Rename(tmp, name)
}
