package safefile

import (
	"fmt"
	"io/fs"
	"os"
)

// Owner is who owns a file, as the platform says.
type Owner int8

const (
	// OwnerOther is another user.
	OwnerOther Owner = iota
	// OwnerSelf is the user running this process.
	OwnerSelf
	// OwnerSystem is root on Unix; SYSTEM or the Administrators on
	// Windows (a file an elevated administrator creates is owned by
	// the Administrators group, not by the administrator).
	OwnerSystem
)

// Access is a file's owner and who else may read or write it, as the
// platform judges it: the mode bits and the owner's uid on Unix, the owner
// SID and the DACL on Windows (Go's FileMode there reflects the read-only
// attribute alone: every file 0666, every directory 0777).
type Access struct {
	Owner Owner
	// OthersRead and OthersWrite: anyone but the owner (and, on Windows,
	// SYSTEM and the Administrators) may read, or write. On Unix: the
	// group or the world bits.
	OthersRead, OthersWrite bool
	// WorldWrite: anyone at all may write (Unix: o+w; Windows: as
	// OthersWrite, since there is no group of the file to tell apart).
	WorldWrite bool
	// Grantee names who else is let in, for messages: a SID on Windows
	// ("S-1-1-0"), "" on Unix (the mode says it).
	Grantee string
	// mode is the Unix permission bits, for messages.
	//lint:ignore U1000 read on Unix only (fixCommand)
	mode fs.FileMode
}

// Rule is what a file must be for a purpose.
type Rule int8

const (
	// NoRule checks nothing.
	NoRule Rule = iota
	// Private: the user's own, and no one else may write it (profiles,
	// directories that hold tokens, key files' directories). On Windows,
	// SYSTEM's and the Administrators' count as the user's own (as
	// Win32-OpenSSH judges a private key).
	Private
	// Secret: Private, and no one else may read it either (a token
	// cache entry, a private key).
	Secret
	// Issued: the user's or the system's (root: the kubelet's projected
	// token), and no one else may write it.
	Issued
	// Cache: the user's own and not writable by all (kubectl writes its
	// discovery cache 0660: a group may write it).
	Cache
)

// Check tells whether a satisfies r; the error names the file (what,
// path) and the command that fixes it on this platform.
func (r Rule) Check(what, path string, a Access, dir bool) error {
	if r == NoRule {
		return nil
	}
	owners := []Owner{OwnerSelf}
	if r == Issued || ownerSystemIsSelf {
		owners = append(owners, OwnerSystem)
	}
	if !ownedBy(a.Owner, owners) {
		if r == Issued {
			return fmt.Errorf("%s %s belongs to another user: refusing to use it (use one of your own, or root's)",
				what, path)
		}
		return fmt.Errorf("%s %s belongs to another user: refusing to use it (use one of your own)", what, path)
	}
	switch {
	case r == Cache && a.WorldWrite, r != Cache && a.OthersWrite:
		return fmt.Errorf("%s %s is writable by others: %s", what, path, fixCommand(path, a, dir, false))
	case r == Secret && a.OthersRead:
		return fmt.Errorf("%s %s is readable by others: %s", what, path, fixCommand(path, a, dir, true))
	}
	return nil
}

func ownedBy(o Owner, owners []Owner) bool {
	for _, w := range owners {
		if o == w {
			return true
		}
	}
	return false
}

// AccessOf is the access of the open file f (fi its Stat): the file
// checked is the file read.
func AccessOf(f *os.File, fi fs.FileInfo) (Access, error) { return accessOf(f, fi) }

// CheckDir refuses path unless it is a directory that satisfies r.
// With follow, a symlink (or a Windows junction) at path is followed, as
// a --token-cache-dir on another disk may be; without, it is refused (a
// discovery cache directory in a shared $KUBECACHEDIR). A missing
// directory's error matches fs.ErrNotExist.
func CheckDir(what, path string, follow bool, r Rule) error {
	a, fi, err := accessAt(path, follow)
	if err != nil {
		return fmt.Errorf("checking %s: %w", what, err)
	}
	if !fi.IsDir() || (!follow && fi.Mode()&(fs.ModeSymlink|fs.ModeIrregular) != 0) {
		return fmt.Errorf("%s %s is not a directory", what, path)
	}
	return r.Check(what, path, a, true)
}

// MkdirPrivate creates dir and its missing parents; dir itself, when it
// is created, is the user's alone (Unix: 0700; Windows: an explicit DACL
// granting the user, SYSTEM and the Administrators only, inherited by
// what is created in it). An existing directory is left as it is.
func MkdirPrivate(dir string) error { return mkdirPrivate(dir) }

// stat is os.Stat with follow, os.Lstat without.
func stat(path string, follow bool) (fs.FileInfo, error) {
	if follow {
		return os.Stat(path)
	}
	return os.Lstat(path)
}
