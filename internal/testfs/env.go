package testfs

import "os"

// HomeOnlyEnv is a getenv of an environment that holds the home directory
// alone (this process's: $HOME, %USERPROFILE% on Windows), for tests whose
// settings must not see the rest of the environment but whose defaults
// (the token cache's directory) are under the home directory.
func HomeOnlyEnv(key string) string {
	if key == "HOME" || key == "USERPROFILE" {
		return os.Getenv(key)
	}
	return ""
}
