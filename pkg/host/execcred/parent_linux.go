package execcred

import (
	"os"
	"strconv"
	"strings"
	"sync"
)

// ParentExecutable is the parent process's executable, read once per
// process: /proc/PPID/exe (" (deleted)" dropped: a runtime upgraded while
// it runs), else, when that link cannot be read (the parent has file
// capabilities, or is another user's), its command name (/proc/PPID/comm,
// readable by all); "" when neither can be read.
var ParentExecutable = sync.OnceValue(func() string {
	proc := "/proc/" + strconv.Itoa(os.Getppid())
	if exe, err := os.Readlink(proc + "/exe"); err == nil {
		return strings.TrimSuffix(exe, " (deleted)")
	}
	comm, err := os.ReadFile(proc + "/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(comm))
})
