package execcred

import (
	"os"
	"strconv"
)

// ParentExecutable is the parent process's executable, "" when it cannot
// be read (another user's process).
func ParentExecutable() string {
	exe, err := os.Readlink("/proc/" + strconv.Itoa(os.Getppid()) + "/exe")
	if err != nil {
		return ""
	}
	return exe
}
