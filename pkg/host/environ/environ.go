// Package environ is the one seam through which the process's globals
// reach code below the commands.
//
//   - Its environment (Getenv, Environ) and the user's home directory as
//     the environment gives it (HomeDir).
//   - The commands' GlobalOptions (pkg/cmd/util) and the binaries' main
//     functions read the process here and hand what they read down as
//     parameters; no other package reads os.Args, os.Getenv, os.LookupEnv,
//     os.Environ, os.UserHomeDir or kubectl's default kubeconfig rules
//     itself (TestProcessGlobals in test/repo).
//   - It imports the standard library only: the cached get-token path links
//     it.
package environ

import (
	"errors"
	"os"
	"runtime"
)

// Getenv reads the process's environment (os.Getenv): what the commands
// hand down as a getenv parameter.
func Getenv(key string) string { return os.Getenv(key) }

// Environ is the process's environment, as KEY=value (os.Environ).
func Environ() []string { return os.Environ() }

// HomeDir is the user's home directory as os.UserHomeDir finds it, read
// with getenv: $HOME ($USERPROFILE on Windows, $home on Plan 9); an error
// that names the variable when it is empty.
func HomeDir(getenv func(string) string) (string, error) {
	return homeDir(getenv, runtime.GOOS)
}

func homeDir(getenv func(string) string, goos string) (string, error) {
	env, unset := "HOME", "$HOME"
	switch goos {
	case "windows":
		env, unset = "USERPROFILE", "%userprofile%"
	case "plan9":
		env, unset = "home", "$home"
	}
	if v := getenv(env); v != "" {
		return v, nil
	}
	switch goos {
	case "android":
		return "/sdcard", nil
	case "ios":
		return "/", nil
	}
	return "", errors.New(unset + " is not defined")
}
