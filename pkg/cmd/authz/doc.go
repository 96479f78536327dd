// Package authz holds the commands that ask what an identity may do, as
// the cluster answers: access (the RBAC matrix), list, why and who-can.
//
// They read the cluster through pkg/cluster/inspect and evaluate RBAC with
// pkg/cluster/rbac and pkg/cluster/rbaceval.
package authz
