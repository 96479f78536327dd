//go:build unix

package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// ownerSystemIsSelf: on Unix, root's file is not the user's own.
const ownerSystemIsSelf = false

// accessOf reads the mode bits and the owner's uid of fi (the descriptor's
// own Stat on Unix).
func accessOf(_ *os.File, fi fs.FileInfo) (Access, error) { return unixAccess(fi), nil }

func accessAt(path string, follow bool) (Access, fs.FileInfo, error) {
	fi, err := stat(path, follow)
	if err != nil {
		return Access{}, nil, err
	}
	return unixAccess(fi), fi, nil
}

func unixAccess(fi fs.FileInfo) Access {
	perm := fi.Mode().Perm()
	a := Access{
		Owner:       OwnerOther,
		OthersRead:  perm&0o044 != 0,
		OthersWrite: perm&0o022 != 0,
		WorldWrite:  perm&0o002 != 0,
		mode:        perm,
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		switch int(st.Uid) {
		case os.Getuid():
			a.Owner = OwnerSelf
		case 0:
			a.Owner = OwnerSystem
		}
	}
	return a
}

// fixCommand is the chmod that makes path private (secret: unreadable by
// others too).
func fixCommand(path string, a Access, dir, secret bool) string {
	switch {
	case secret && dir:
		return fmt.Sprintf("chmod 700 %s (mode %s)", path, a.mode)
	case secret:
		return fmt.Sprintf("chmod 600 %s (mode %s)", path, a.mode)
	}
	return fmt.Sprintf("chmod go-w %s", path)
}

// setPrivate gives the file just created at name in root its mode: as
// asked, whatever the umask.
func setPrivate(_ *os.Root, _ string, f *os.File, mode fs.FileMode) error { return f.Chmod(mode) }

func mkdirPrivate(dir string) error { return os.MkdirAll(dir, 0o700) }

// openRead opens path for reading without waiting on a FIFO or a terminal
// (nor making a terminal ours) and, with noFollow, refusing a symlink at
// its last element.
func openRead(path string, noFollow bool) (*os.File, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY
	if noFollow {
		flags |= syscall.O_NOFOLLOW
	}
	return os.OpenFile(path, flags, 0)
}

// errLink is openAppend's refusal of a symbolic link.
var errLink = errors.New("a symbolic link")

// openAppend opens path to append, created 0600 whatever the umask lets
// (the mode is the open's), not following a symlink at its last element
// (O_NOFOLLOW: ELOOP), nor waiting on a FIFO (O_NONBLOCK: ENXIO without a
// reader) or making a terminal ours.
func openAppend(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|
		syscall.O_NOCTTY, 0o600)
	if errors.Is(err, syscall.ELOOP) {
		return nil, errLink
	}
	return f, err
}

// linkCount is how many names the file has.
func linkCount(_ *os.File, fi fs.FileInfo) (uint64, error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, errors.New("no link count")
	}
	return uint64(st.Nlink), nil // a uint16 on darwin
}
