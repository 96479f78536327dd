// Package setup holds the commands that write configuration.
//
//   - setup: a kubeconfig exec entry, a profile, the kuberc allowlist,
//     completion, an authentication configuration.
//   - The kubelogin migration.
package setup
