// Package risk says what in RBAC lets its holder gain more than a rule
// names: the one answer every command asks.
//
//   - The escalation checks kube-apiserver makes (impersonation in both
//     modes, bind, escalate).
//   - The streaming verbs' pairing.
//   - Kubernetes' list of privilege escalation risks ("Role Based Access
//     Control Good Practices") as one Risk per verb and resource.
package risk
