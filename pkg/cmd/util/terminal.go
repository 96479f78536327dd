package util

import (
	"io"
	"os"
	"sync"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
)

// alsoToTerminal writes to w and, from the first write on, to the
// controlling terminal: where a person reads a login's prompts when the
// run may ask one (interactive) but stderr is not a terminal. The Python
// client captures the plugin's stderr and shows it only when the plugin
// fails: the browser URL or the device code written there alone would
// never reach the person at the terminal (ssh and git's credential
// helpers prompt on /dev/tty for the same reason). What reaches the
// terminal is escaped as stderr is.
type alsoToTerminal struct {
	w    io.Writer
	open func() (io.Writer, error)
	once sync.Once
	tty  io.Writer
}

func (a *alsoToTerminal) Write(p []byte) (int, error) {
	a.once.Do(func() {
		if tty, err := a.open(); err == nil {
			a.tty = logging.NewSafeWriter(tty)
		}
	})
	if a.tty != nil {
		_, _ = a.tty.Write(p)
	}
	return a.w.Write(p)
}

// OpenControllingTerminal opens the process's controlling terminal for
// writing (an error without one: a daemon, a CI job): /dev/tty on Unix,
// the console's output (CONOUT$) on Windows.
func OpenControllingTerminal() (io.Writer, error) {
	return os.OpenFile(controllingTerminal, os.O_WRONLY, 0)
}
