// Package integration runs kubectl-impersonate's three binaries as they
// are built (TestMain builds them once) against in-process providers, API
// servers written by an attacker, kubeconfigs and a second local user:
// the suites that need a process, its exit code, its streams and its
// files, beside the packages' own unit tests. The docs' commands are
// parsed and the offline ones run here too (TestDocs).
package integration
