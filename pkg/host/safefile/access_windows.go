//go:build windows

package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"
)

// ownerSystemIsSelf: on Windows a file owned by SYSTEM or the
// Administrators counts as the user's own, as Win32-OpenSSH judges a
// private key (check_secure_file_permission): an elevated administrator's
// new files are owned by the Administrators group.
const ownerSystemIsSelf = true

// Access rights that let a grantee read, or change, a file or directory
// (for a directory FILE_READ_DATA lists it and FILE_WRITE_DATA /
// FILE_APPEND_DATA add entries to it).
const (
	readRights  = windows.FILE_READ_DATA | windows.GENERIC_READ | windows.GENERIC_ALL
	writeRights = windows.FILE_WRITE_DATA | windows.FILE_APPEND_DATA | windows.FILE_WRITE_EA |
		fileDeleteChild | windows.FILE_WRITE_ATTRIBUTES | windows.DELETE |
		windows.WRITE_DAC | windows.WRITE_OWNER | windows.GENERIC_WRITE | windows.GENERIC_ALL
)

// ACE types and flags read here (winnt.h).
const (
	aceAllowed         = 0x0  // ACCESS_ALLOWED_ACE_TYPE
	aceAllowedCallback = 0x9  // ACCESS_ALLOWED_CALLBACK_ACE_TYPE: laid out as ACCESS_ALLOWED_ACE
	aceAllowedObject   = 0x5  // ACCESS_ALLOWED_OBJECT_ACE_TYPE: GUIDs before the SID
	aceAllowedCbObject = 0xB  // ACCESS_ALLOWED_CALLBACK_OBJECT_ACE_TYPE
	aceInheritOnly     = 0x8  // INHERIT_ONLY_ACE: applies to children, not to this object
	fileDeleteChild    = 0x40 // FILE_DELETE_CHILD: a directory's entries may be deleted
)

// sids are the user running this process and the accounts that count as
// the system: SYSTEM, the Administrators, TrustedInstaller.
type sids struct {
	user                 *windows.SID
	system, admins, ti   *windows.SID
	ownerRights, creator *windows.SID
}

var wellKnown = sync.OnceValues(func() (*sids, error) {
	tu, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return nil, fmt.Errorf("reading this process's user: %w", err)
	}
	s := &sids{}
	if s.user, err = tu.User.Sid.Copy(); err != nil {
		return nil, err
	}
	for _, w := range []struct {
		p   **windows.SID
		sid string
	}{
		{&s.system, "S-1-5-18"},
		{&s.admins, "S-1-5-32-544"},
		{&s.ti, "S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464"},
		{&s.ownerRights, "S-1-3-4"},
		{&s.creator, "S-1-3-0"},
	} {
		if *w.p, err = windows.StringToSid(w.sid); err != nil {
			return nil, err
		}
	}
	return s, nil
})

func (s *sids) owner(o *windows.SID) Owner {
	switch {
	case o == nil:
		return OwnerOther
	case o.Equals(s.user):
		return OwnerSelf
	case o.Equals(s.system), o.Equals(s.admins), o.Equals(s.ti):
		return OwnerSystem
	}
	return OwnerOther
}

// trusted is a grantee whose access does not make a file anyone else's:
// the user, the system's accounts, and the owner's own rights.
func (s *sids) trusted(g *windows.SID) bool {
	for _, t := range []*windows.SID{s.user, s.system, s.admins, s.ti, s.ownerRights, s.creator} {
		if g.Equals(t) {
			return true
		}
	}
	return false
}

// judge reads the owner and the DACL of sd.
func judge(sd *windows.SECURITY_DESCRIPTOR) (Access, error) {
	s, err := wellKnown()
	if err != nil {
		return Access{}, err
	}
	owner, _, err := sd.Owner()
	if err != nil {
		return Access{}, fmt.Errorf("reading the owner: %w", err)
	}
	a := Access{Owner: s.owner(owner)}
	dacl, _, err := sd.DACL()
	if errors.Is(err, windows.ERROR_OBJECT_NOT_FOUND) || (err == nil && dacl == nil) {
		// No DACL, or a NULL one: everyone may do anything.
		a.OthersRead, a.OthersWrite, a.WorldWrite, a.Grantee = true, true, true, "Everyone (no DACL)"
		return a, nil
	}
	if err != nil {
		return Access{}, fmt.Errorf("reading the DACL: %w", err)
	}
	for i := range uint32(dacl.AceCount) {
		var ace *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(dacl, i, &ace); err != nil {
			return Access{}, fmt.Errorf("reading the DACL: %w", err)
		}
		if ace.Header.AceFlags&aceInheritOnly != 0 {
			continue
		}
		var grantee *windows.SID
		switch ace.Header.AceType {
		case aceAllowed, aceAllowedCallback:
			grantee = (*windows.SID)(unsafe.Pointer(&ace.SidStart))
			if s.trusted(grantee) {
				continue
			}
		case aceAllowedObject, aceAllowedCbObject:
			// Not written on files; not parsed here: counted as anyone's.
		default:
			continue // denials and audits let no one in
		}
		r, w := ace.Mask&readRights != 0, ace.Mask&writeRights != 0
		if grantee == nil {
			r, w = true, true
		}
		if (r || w) && a.Grantee == "" {
			a.Grantee = "an allowed object ACE"
			if grantee != nil {
				a.Grantee = grantee.String()
			}
		}
		a.OthersRead = a.OthersRead || r
		a.OthersWrite = a.OthersWrite || w
	}
	a.WorldWrite = a.OthersWrite
	return a, nil
}

const securityInfo = windows.OWNER_SECURITY_INFORMATION | windows.DACL_SECURITY_INFORMATION

func accessOf(f *os.File, _ fs.FileInfo) (Access, error) {
	sd, err := windows.GetSecurityInfo(windows.Handle(f.Fd()), windows.SE_FILE_OBJECT, securityInfo)
	if err != nil {
		return Access{}, fmt.Errorf("reading the security of %s: %w", f.Name(), err)
	}
	return judge(sd)
}

func accessAt(path string, follow bool) (Access, fs.FileInfo, error) {
	fi, err := stat(path, follow)
	if err != nil {
		return Access{}, nil, err
	}
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, securityInfo)
	if err != nil {
		return Access{}, nil, fmt.Errorf("reading the security of %s: %w", path, err)
	}
	a, err := judge(sd)
	return a, fi, err
}

// fixCommand is the icacls command (cmd.exe) that leaves path to the user
// alone: inherited entries removed, the user granted full control, the
// other grantee found removed.
func fixCommand(path string, a Access, dir, _ bool) string {
	grant := "%USERNAME%:F"
	if dir {
		grant = "%USERNAME%:(OI)(CI)F"
	}
	cmd := fmt.Sprintf("icacls %q /inheritance:r /grant:r %q", path, grant)
	if sid := a.Grantee; len(sid) > 2 && sid[:2] == "S-" {
		cmd += fmt.Sprintf(" && icacls %q /remove:g *%s", path, sid)
	}
	return cmd + " (" + a.Grantee + " is let in)"
}

// privateSD is a protected DACL granting full control to the user,
// SYSTEM and the Administrators; inherit adds OI and CI so that what is
// created in a directory gets it too.
func privateSD(inherit bool) (*windows.SECURITY_DESCRIPTOR, error) {
	s, err := wellKnown()
	if err != nil {
		return nil, err
	}
	flags := ""
	if inherit {
		flags = "OICI"
	}
	return windows.SecurityDescriptorFromString(fmt.Sprintf("D:P(A;%[1]s;FA;;;%[2]s)(A;%[1]s;FA;;;SY)(A;%[1]s;FA;;;BA)",
		flags, s.user))
}

// setPrivate gives the file just created at name in root a DACL of the
// user's alone when mode lets no one else in; a file others may read
// (kubectl's cache, 0660; an executable, 0755) keeps the DACL its
// directory hands down.
func setPrivate(root *os.Root, name string, _ *os.File, mode fs.FileMode) error {
	if mode&0o077 != 0 {
		return nil
	}
	sd, err := privateSD(false)
	if err != nil {
		return err
	}
	return SetSecurity(filepath.Join(root.Name(), name), sd)
}

// SetSecurity sets the DACL of the file or directory at path to sd's, as
// given: SetKernelObjectSecurity on a handle opened for it, which (unlike
// SetNamedSecurityInfo under Wine 8.0) merges in nothing of the parent's.
func SetSecurity(path string, sd *windows.SECURITY_DESCRIPTOR) error {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return err
	}
	h, err := windows.CreateFile(p, windows.WRITE_DAC|windows.READ_CONTROL,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil,
		windows.OPEN_EXISTING, windows.FILE_FLAG_BACKUP_SEMANTICS|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if err != nil {
		return fmt.Errorf("making %s private: %w", path, err)
	}
	defer func() { _ = windows.CloseHandle(h) }()
	if err := windows.SetKernelObjectSecurity(h,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, sd); err != nil {
		return fmt.Errorf("making %s private: %w", path, err)
	}
	return nil
}

func mkdirPrivate(dir string) error {
	dir = filepath.Clean(dir)
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return err
	}
	sd, err := privateSD(true)
	if err != nil {
		return err
	}
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return err
	}
	sa := &windows.SecurityAttributes{SecurityDescriptor: sd}
	sa.Length = uint32(unsafe.Sizeof(*sa))
	if err := windows.CreateDirectory(p, sa); err != nil && !errors.Is(err, windows.ERROR_ALREADY_EXISTS) {
		return &os.PathError{Op: "mkdir", Path: dir, Err: err}
	}
	return nil
}

// errReparsePoint is the refusal of a symlink or junction where none may be.
var errReparsePoint = errors.New("is a symbolic link or junction")

// openRead opens path for reading; with noFollow a reparse point
// (symlink, junction) at its last element is opened as itself and
// refused (openHandle).
func openRead(path string, noFollow bool) (*os.File, error) {
	if !noFollow {
		return os.Open(path)
	}
	return openHandle(path, windows.GENERIC_READ,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil, windows.OPEN_EXISTING,
		windows.FILE_FLAG_BACKUP_SEMANTICS)
}

// errLink is openAppend's refusal of a symlink or junction.
var errLink = errReparsePoint

// openAppend opens path to append (FILE_APPEND_DATA alone: every write at
// the end), created with a private DACL (privateSD: not the folder's), a
// reparse point at its last element refused (openHandle).
func openAppend(path string) (*os.File, error) {
	sd, err := privateSD(false)
	if err != nil {
		return nil, err
	}
	sa := &windows.SecurityAttributes{SecurityDescriptor: sd}
	sa.Length = uint32(unsafe.Sizeof(*sa))
	return openHandle(path, windows.FILE_APPEND_DATA|windows.READ_CONTROL|windows.FILE_READ_ATTRIBUTES,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE, sa, windows.OPEN_ALWAYS, windows.FILE_ATTRIBUTE_NORMAL)
}

// openHandle opens path with CreateFile as asked, a reparse point at its
// last element (symlink, junction) opened as itself
// (FILE_FLAG_OPEN_REPARSE_POINT) and refused: errReparsePoint.
func openHandle(path string, access, share uint32, sa *windows.SecurityAttributes, disposition,
	flags uint32) (*os.File, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	h, err := windows.CreateFile(p, access, share, sa, disposition, flags|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &info); err != nil {
		_ = windows.CloseHandle(h)
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	if info.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0 {
		_ = windows.CloseHandle(h)
		return nil, &os.PathError{Op: "open", Path: path, Err: errReparsePoint}
	}
	return os.NewFile(uintptr(h), path), nil
}

// linkCount is how many names the file has.
func linkCount(f *os.File, _ fs.FileInfo) (uint64, error) {
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(windows.Handle(f.Fd()), &info); err != nil {
		return 0, err
	}
	return uint64(info.NumberOfLinks), nil
}
