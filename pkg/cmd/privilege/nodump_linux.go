package privilege

import "golang.org/x/sys/unix"

// noDump makes this process not dumpable: another process of the same
// user (the command recorded) can then neither ptrace it nor read its
// memory (/proc/PID/mem), whatever kernel.yama.ptrace_scope says.
func noDump() { _ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }
