package execcred

import "strings"

// A client that speaks the protocol without KUBERNETES_EXEC_INFO: the
// JavaScript client (@kubernetes/client-node, 1.x) spawns the exec entry's
// command with the entry's env on top of its own and sets no
// KUBERNETES_EXEC_INFO. Under it, the variable can only have come from the
// entry (a cluster of the entry's choosing, to pass --allowed-server), and
// the absence of one does not mean a person typed the command. So the
// plugin recognizes that client by its runtime, the parent process's
// executable (Linux: /proc/PPID/exe; elsewhere unknown, docs/security.md).
// The Python client sets the variable itself, after the entry's env.
// The runtimes that run that client: Node.js (node, nodejs, and the
// versioned names distributions install: node22, node-22), Bun and Deno.
var clientRuntimes = []string{"node", "nodejs", "bun", "deno"}

// IsClientRuntime tells whether exe, a parent process's executable, is the
// runtime of a client that sets no KUBERNETES_EXEC_INFO.
func IsClientRuntime(exe string) bool {
	name := strings.TrimSuffix(strings.ToLower(exe[strings.LastIndexAny(exe, `/\`)+1:]), ".exe")
	if base, version, ok := strings.Cut(name, "-"); ok {
		name = base + version
	}
	name = strings.TrimRight(name, "0123456789.")
	for _, r := range clientRuntimes {
		if name == r {
			return true
		}
	}
	return false
}

// FromEnvironment reads the request of the program that runs the plugin:
// KUBERNETES_EXEC_INFO (getenv), unless parentExe is a client runtime
// that sets none. Then the variable is ignored whatever its value, and the
// run is a credential-plugin run all the same (FromKubectl): apiVersion
// v1, not interactive (that client pipes the plugin's stdin), no cluster.
func FromEnvironment(getenv func(string) string, parentExe func() string) (*Request, error) {
	if parentExe != nil && IsClientRuntime(parentExe()) {
		return &Request{APIVersion: APIVersionV1, FromKubectl: true, ByClientWithoutExecInfo: true}, nil
	}
	return ParseRequest(getenv(EnvExecInfo))
}

// RunByClient tells whether a Kubernetes client runs the plugin from a
// kubeconfig exec entry: KUBERNETES_EXEC_INFO is set, or the parent is a
// client runtime that sets none.
func RunByClient(getenv func(string) string, parentExe func() string) bool {
	return getenv(EnvExecInfo) != "" || (parentExe != nil && IsClientRuntime(parentExe()))
}
