// Package risk says what in RBAC lets its holder gain more than a rule
// names, the one answer every command asks: the escalation checks
// kube-apiserver makes (impersonation in both modes, bind, escalate), the
// streaming verbs' pairing, and Kubernetes' list of privilege escalation
// risks ("Role Based Access Control Good Practices") as one Risk per verb
// and resource.
package risk
