// Package install knows how the plugin is installed: its three binaries,
// side by side in one directory, and Krew's link to them. It imports
// nothing of ours, so every binary may use it.
//
//   - kubectl-impersonate-get_token: the cached get-token path, which kubectl
//     runs on every call (pkg/credential/fastpath); Krew links kubectl-impersonate to it.
//   - kubectl-impersonate: every command (pkg/cmd).
//   - kubectl-impersonate-apiserver: the commands that run kube-apiserver's
//     own code (claims, proxy, setup --authentication-config; pkg/server/kubecode/linked).
//     Linking that code costs every process its package initialisers (about
//     10 ms: component-base's metrics registry, CEL, the egress selector), so
//     the other binaries hand those commands to it.
package install

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/environ"
)

const (
	// FullBinaryName is the binary that handles every command.
	FullBinaryName = "kubectl-impersonate"
	// FastBinaryName is the fast get-token binary. kubectl maps "kubectl
	// impersonate get-token" to this name (dashes in subcommands become
	// underscores), so it is also what kubectl runs for that command.
	FastBinaryName = "kubectl-impersonate-get_token"
	// APIServerBinaryName carries kube-apiserver's authenticator.
	APIServerBinaryName = "kubectl-impersonate-apiserver"
	// KrewPluginName is the plugin's name in the Krew index.
	KrewPluginName = "impersonate"
	// CompletionBinaryName is what kubectl (1.26+) runs on PATH to complete
	// "kubectl impersonate ...": it hands the words to the full binary's
	// __complete (cmd/kubectl_complete-impersonate).
	CompletionBinaryName = "kubectl_complete-" + KrewPluginName
)

// Exe is name as a file name on this platform.
func Exe(name string) string {
	if runtime.GOOS == "windows" {
		return name + ".exe"
	}
	return name
}

// Names lists the three binaries' names, as a kuberc allowlist or a
// process's argv[0] names them.
func Names() []string { return []string{FullBinaryName, FastBinaryName, APIServerBinaryName} }

// IsOurs says whether path (a command, with or without directory and .exe)
// names one of the plugin's binaries.
func IsOurs(path string) bool {
	base := strings.TrimSuffix(strings.ToLower(filepath.Base(path)), ".exe")
	for _, n := range Names() {
		if base == n {
			return true
		}
	}
	return false
}

// Next is the binary called name next to the running one.
func Next(name string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	if resolved, err := filepath.EvalSymlinks(self); err == nil {
		self = resolved
	}
	p := filepath.Join(filepath.Dir(self), Exe(name))
	fi, err := os.Stat(p)
	if err != nil || fi.IsDir() {
		return "",
			errors.New(Exe(name) + " is not next to " + self + ": install the plugin's binaries (" +
				strings.Join(Names(), ", ") + ") into the same directory")
	}
	// Handing a command to this very file (the same path, or a link to it)
	// would hand it on forever.
	if sfi, err := os.Stat(self); p == self || (err == nil && os.SameFile(fi, sfi)) {
		return "", errors.New(p + " is " + self + " under another binary's name: install the plugin's binaries side " +
			"by side, each under its own name")
	}
	return p, nil
}

// Sibling is the binary called name next to the binary at path, if installed.
func Sibling(path, name string) (string, bool) {
	p := filepath.Join(filepath.Dir(path), Exe(name))
	fi, err := os.Stat(p)
	return p, err == nil && !fi.IsDir()
}

// KrewLink is the path Krew links to the plugin ($KREW_ROOT/bin/
// kubectl-impersonate), when full runs from Krew's store: that path stays
// the same across "kubectl krew upgrade", which removes the old version's
// directory, so kubeconfig entries must use it rather than the store path.
func KrewLink(full string, getenv func(string) string) (string, bool) {
	root := getenv("KREW_ROOT")
	if root == "" {
		home, err := environ.HomeDir(getenv)
		if err != nil {
			return "", false
		}
		root = filepath.Join(home, ".krew")
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	store := filepath.Join(root, "store", KrewPluginName) + string(filepath.Separator)
	if !strings.HasPrefix(full, store) {
		return "", false
	}
	link := filepath.Join(root, "bin", Exe(FullBinaryName))
	if _, err := os.Stat(link); err != nil {
		return "", false
	}
	return link, true
}
