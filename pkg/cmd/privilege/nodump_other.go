//go:build !linux

package privilege

// noDump: only Linux has PR_SET_DUMPABLE; elsewhere the command, as the
// same user, may be able to read record's memory (docs/security.md).
func noDump() {}
