// Package authz holds the commands that ask what an identity may do, as
// the cluster answers: access (the RBAC matrix), list (the objects it may
// act on), why (one request, the rule that allows it) and who-can. They
// read the cluster through pkg/cluster/inspect and evaluate RBAC with pkg/cluster/rbac.
package authz
