//go:build unix

package testfs

import (
	"os"
	"syscall"
	"testing"
)

// Mkfifo makes a FIFO at path (a read of it would wait for a writer).
func Mkfifo(t testing.TB, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatalf("mkfifo %s: %v", path, err)
	}
}

// PeakRSS is the peak resident set of the exited process ps, in KiB
// (Linux's ru_maxrss unit).
func PeakRSS(ps *os.ProcessState) (int64, bool) {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, false
	}
	return int64(ru.Maxrss), true
}
