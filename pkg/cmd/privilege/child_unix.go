//go:build unix

package privilege

import (
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// stopSignals are the signals that end record, beside the binary's
// interrupt and SIGTERM: a closed terminal's hangup.
var stopSignals = []os.Signal{syscall.SIGHUP}

// inGroup puts the command in a process group of its own, so that
// stopping it reaches what it started too (helm's plugins, a test suite's
// workers). When record is the terminal's foreground job, the command's
// group becomes the foreground one, as a shell runs a job: Ctrl-C and the
// terminal reach it, and it may read the terminal (kubectl exec -it).
// restore gives the terminal back to record's group once it ended.
func inGroup(c *exec.Cmd, stdin any) (restore func()) {
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	f, ok := stdin.(*os.File)
	if !ok {
		return func() {}
	}
	fd := int(f.Fd())
	fg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil || fg != unix.Getpgrp() {
		return func() {} // not a terminal, or record is not its foreground job
	}
	c.SysProcAttr.Foreground, c.SysProcAttr.Ctty = true, fd
	return func() {
		// A background group that sets the foreground is stopped by
		// SIGTTOU unless it ignores it.
		signal.Ignore(syscall.SIGTTOU)
		defer signal.Reset(syscall.SIGTTOU)
		_ = unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, unix.Getpgrp())
	}
}

// signalGroup sends sig to the command's process group.
func signalGroup(p *os.Process, sig syscall.Signal) { _ = syscall.Kill(-p.Pid, sig) }

// terminate asks the command's group to end (SIGTERM); kill ends it.
func terminate(p *os.Process) { signalGroup(p, syscall.SIGTERM) }
func kill(p *os.Process)      { signalGroup(p, syscall.SIGKILL) }
