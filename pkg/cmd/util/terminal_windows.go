//go:build windows

package util

// controllingTerminal is the process's console (its output buffer),
// whatever its streams: the console a person reads, where stderr is
// captured by a client (Python's) that shows it only on failure.
const controllingTerminal = "CONOUT$"
