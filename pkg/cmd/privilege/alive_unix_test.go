//go:build unix

package privilege

import (
	"os"
	"strconv"
	"syscall"
)

// alive tells whether process pid still runs (a zombie not reaped by
// its parent counts as ended: kill(pid, 0) succeeds for it, so its
// state is read where /proc has it).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := readStat(pid)
	return err != nil || !zombie(b)
}

func readStat(pid int) ([]byte, error) { return osReadFile(procStat(pid)) }

// zombie reads a /proc/PID/stat line's state: Z.
func zombie(stat []byte) bool {
	for i := len(stat) - 1; i > 0; i-- {
		if stat[i] == ')' {
			return i+2 < len(stat) && stat[i+2] == 'Z'
		}
	}
	return false
}

var osReadFile = os.ReadFile

func procStat(pid int) string { return "/proc/" + strconv.Itoa(pid) + "/stat" }
