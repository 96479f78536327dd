//go:build windows

package execcred

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"
)

// FastBinaryExe is the fast get-token binary's file on Windows. Windows
// has no exec: that binary runs this one as a child to hand a call over,
// so the full binary's parent is then the fast binary, and kubectl (or the
// client runtime) is the one above it.
const FastBinaryExe = "kubectl-impersonate-get_token.exe"

// openParent opens the process that runs the plugin with access: the
// parent, or above the fast binary when that is the parent. The parent's
// PID is the one Windows recorded at this process's creation (os.Getppid,
// from a ToolHelp snapshot); Windows reuses PIDs, so a parent that exited
// could name another program.
func openParent(access uint32) (windows.Handle, error) {
	pid := uint32(os.Getppid())
	for range 2 {
		h, err := windows.OpenProcess(access|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
		if err != nil {
			return 0, err
		}
		if !strings.EqualFold(filepath.Base(imageName(h)), FastBinaryExe) {
			return h, nil
		}
		var pbi windows.PROCESS_BASIC_INFORMATION
		err = windows.NtQueryInformationProcess(h, windows.ProcessBasicInformation, unsafe.Pointer(&pbi),
			uint32(unsafe.Sizeof(pbi)), nil)
		_ = windows.CloseHandle(h)
		if err != nil {
			return 0, err
		}
		pid = uint32(pbi.InheritedFromUniqueProcessId)
	}
	return 0, errors.New("the fast get-token binary runs itself: no caller above it")
}

// imageName is the full image name of the process h, "" when unknown.
func imageName(h windows.Handle) string {
	buf := make([]uint16, windows.MAX_LONG_PATH)
	n := uint32(len(buf))
	if err := windows.QueryFullProcessImageName(h, 0, &buf[0], &n); err != nil {
		return ""
	}
	return windows.UTF16ToString(buf[:n])
}

// ParentExecutable is the executable of the process that runs the plugin
// (openParent), read once per process; "" when it cannot be opened (it
// exited, or it is another user's).
var ParentExecutable = sync.OnceValue(func() string {
	h, err := openParent(0)
	if err != nil {
		return ""
	}
	defer func() { _ = windows.CloseHandle(h) }()
	return imageName(h)
})

// ParentEnviron is the environment block of the process that runs the
// plugin (openParent), read from its PEB (ReadProcessMemory: a process of the same user): kubectl's
// environment, as Linux reads /proc/PPID/environ.
func ParentEnviron() ([]string, error) {
	h, err := openParent(windows.PROCESS_QUERY_INFORMATION | windows.PROCESS_VM_READ)
	if err != nil {
		return nil, err
	}
	defer func() { _ = windows.CloseHandle(h) }()
	var pbi windows.PROCESS_BASIC_INFORMATION
	if err := windows.NtQueryInformationProcess(h, windows.ProcessBasicInformation, unsafe.Pointer(&pbi),
		uint32(unsafe.Sizeof(pbi)), nil); err != nil {
		return nil, err
	}
	read := func(addr uintptr, out unsafe.Pointer, size uintptr) error {
		return windows.ReadProcessMemory(h, addr, (*byte)(out), size, nil)
	}
	var peb windows.PEB
	if err := read(uintptr(unsafe.Pointer(pbi.PebBaseAddress)), unsafe.Pointer(&peb), unsafe.Sizeof(peb)); err != nil {
		return nil, err
	}
	var params windows.RTL_USER_PROCESS_PARAMETERS
	if err := read(uintptr(unsafe.Pointer(peb.ProcessParameters)), unsafe.Pointer(&params),
		unsafe.Sizeof(params)); err != nil {
		return nil, err
	}
	if params.EnvironmentSize == 0 || params.EnvironmentSize > 1<<20 {
		return nil, errors.New("no environment block, or one over 1 MiB")
	}
	block := make([]uint16, params.EnvironmentSize/2)
	if err := read(uintptr(params.Environment), unsafe.Pointer(&block[0]), uintptr(len(block))*2); err != nil {
		return nil, err
	}
	var env []string
	for len(block) > 0 && block[0] != 0 { // NUL-separated, ended by an empty string
		i := 0
		for i < len(block) && block[i] != 0 {
			i++
		}
		env = append(env, windows.UTF16ToString(block[:i]))
		block = block[min(i+1, len(block)):]
	}
	return env, nil
}
