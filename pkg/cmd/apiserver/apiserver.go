// Package apiserver runs kube-apiserver's own code for the commands that
// need it: claims predicts with its JWT authenticator, proxy serves with it,
// setup --authentication-config checks a cluster's configuration as
// kube-apiserver validates it. Only cmd/kubectl-impersonate-apiserver
// imports this package: the code's package initialisers (component-base's
// metrics registry, CEL, the egress selector) would otherwise cost every
// kubectl-impersonate process about 10 ms. pkg/cmd defines the commands
// (flags, help, Validate) and hands them here through cmd.APIServerCode.
package apiserver

import "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd"

// Code implements cmd.APIServerCode.
type Code struct{}

var _ cmd.APIServerCode = Code{}
