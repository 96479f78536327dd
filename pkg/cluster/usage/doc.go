// Package usage is what an identity used of the API: requests as
// kube-apiserver's authorizer sees them, read from kube-apiserver's audit
// log or from a recording in the same form (audit.k8s.io/v1 Event lines,
// which pkg/server/recorder writes), and the least privilege that serves
// them (Roles, a ClusterRole and their bindings).
package usage
