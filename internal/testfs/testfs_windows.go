//go:build windows

package testfs

import (
	"os"
	"testing"
)

// Mkfifo: Windows has no FIFOs in its file system; the test is skipped.
func Mkfifo(t testing.TB, _ string) {
	t.Helper()
	t.Skip("no FIFOs on Windows")
}

// PeakRSS is not read on Windows.
func PeakRSS(*os.ProcessState) (int64, bool) { return 0, false }
