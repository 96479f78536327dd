// Package auditlog reads what an identity used of the API, as
// kube-apiserver's authorizer saw it.
//
//   - Request is one request's checks and the decision shown for it:
//     allowed only on positive evidence (DecisionOf, DecisionAnnotation).
//   - Read takes kube-apiserver's audit log (audit.k8s.io/v1 Event lines),
//     a recording in the same form (pkg/server/recorder writes it) or the
//     impersonating proxy's log (ProxyLine); bad lines are skipped and
//     counted.
//   - Seal signs a recording so that the recorded command cannot add to it.
//
// What least privilege serves the requests read is pkg/cluster/rolegen's.
package auditlog
