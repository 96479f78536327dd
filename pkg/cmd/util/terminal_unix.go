//go:build !windows

package util

// controllingTerminal is the process's terminal, whatever its streams.
const controllingTerminal = "/dev/tty"
