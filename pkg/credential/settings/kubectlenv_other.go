//go:build !linux && !darwin && !windows

package settings

// readKubectlEnv: kubectl's own environment is not read on this platform,
// so the exec entry's environment variables are not told apart from
// kubectl's (docs/security.md says so).
func readKubectlEnv() (map[string]string, error) { return nil, errEnvNotRead }
