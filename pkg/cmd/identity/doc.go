// Package identity holds the commands that say who the context is to its
// cluster.
//
//   - whoami: the API server's SelfSubjectReview beside the token's claims.
//   - groups.
//   - claims: what kube-apiserver's authentication configuration maps a
//     token to, predicted with its own code through pkg/server/kubecode.
package identity
