package util

import (
	"runtime"
	"runtime/debug"
)

// Set by the release build: -ldflags "-X .../pkg/cmd/util.version=v1.2.3 -X .../pkg/cmd/util.commit=abc".
var (
	version = ""
	commit  = ""
)

// VersionInfo is what version prints.
type VersionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Version returns the build's version: the ldflags stamp, else the module
// version of a "go install", else "devel".
func Version() VersionInfo {
	v := VersionInfo{Version: version, Commit: commit, GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if v.Version == "" {
		v.Version = "devel"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
	}
	return v
}
