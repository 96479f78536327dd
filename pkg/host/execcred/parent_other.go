//go:build !linux && !darwin && !windows

package execcred

// ParentExecutable is "" where the plugin does not look (docs/security.md).
func ParentExecutable() string { return "" }
