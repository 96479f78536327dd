//go:build windows

package privilege

func alive(int) bool { return false }
