// Package setup holds the commands that write configuration: setup (a
// kubeconfig exec entry, a profile, the kuberc allowlist, completion, an
// authentication configuration) and the kubelogin migration.
package setup
