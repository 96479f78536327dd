package safefile

import (
	"errors"
	"fmt"
	"os"
)

// OpenAppend is the one open of a secret file to append to (record's
// recording, which holds exec commands and their arguments).
//
//   - A new file is the user's alone (Unix 0600; Windows a protected DACL
//     of the user, SYSTEM and the Administrators, not the folder's).
//   - Never through a link (a symlink, a Windows reparse point), nor at a
//     file with another name (more than one hard link).
//   - An existing file only when it passes the Secret rule.
//
// what names the file in errors.
func OpenAppend(what, path string) (*os.File, error) {
	f, err := openAppend(path)
	if errors.Is(err, errLink) {
		return nil, fmt.Errorf("%s %s is a symbolic link: give the file itself", what, path)
	}
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", what, err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s %s is not a regular file", what, path)
	}
	if err == nil {
		var n uint64
		if n, err = linkCount(f, fi); err == nil && n > 1 {
			err = fmt.Errorf("%s %s has %d names (hard links): give a file of its own", what, path, n)
		}
	}
	if err == nil {
		var a Access
		if a, err = accessOf(f, fi); err == nil {
			err = Secret.Check(what, path, a, false)
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}
