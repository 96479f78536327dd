//go:build windows

package privilege

import (
	"os"
	"os/exec"
)

// stopSignals: Windows has no hangup beside the console's interrupt.
var stopSignals []os.Signal

// inGroup leaves the command in record's console: Ctrl-C reaches both.
func inGroup(*exec.Cmd, any) (restore func()) { return func() {} }

// terminate and kill end the command (Windows has no SIGTERM to ask
// with).
func terminate(p *os.Process) { _ = p.Kill() }
func kill(p *os.Process)      { _ = p.Kill() }
