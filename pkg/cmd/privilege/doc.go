// Package privilege holds the commands that answer what an identity needs,
// not only what it holds.
//
//   - record: a program's requests, through a loopback endpoint, as
//     kube-apiserver's authorizer sees them.
//   - least-privilege: the Roles that serve a recording or kube-apiserver's
//     audit log, beside what the identity holds.
//
// They read and write through pkg/cluster/auditlog, pkg/cluster/rolegen and
// pkg/server/recorder.
package privilege
