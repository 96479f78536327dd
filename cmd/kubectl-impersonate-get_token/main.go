// Command kubectl-impersonate-get_token is the cached path of
// "kubectl-impersonate get-token", the command kubectl runs on every call.
//
//   - It prints the ExecCredential when a valid token is cached.
//   - It hands every other case, with the same arguments, to
//     kubectl-impersonate next to it.
//
// Krew links kubectl-impersonate to this binary: run by that name, it also
// hands every other command to the full binary. See pkg/credential/fastpath.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/fastpath"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/environ"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/install"
)

func main() {
	args, other, err := fastpath.Dispatch(os.Args[0], os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubectl-impersonate:", err)
		os.Exit(1)
	}
	if !other {
		served, handoff := fastpath.Serve(context.Background(), args, environ.Getenv, os.Stdout)
		if served {
			return
		}
		for k, v := range handoff {
			_ = os.Setenv(k, v)
		}
	}
	full, err := install.Next(install.FullBinaryName)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubectl-impersonate:", err)
		os.Exit(1)
	}
	if other {
		os.Exit(install.Run(full, os.Args[1:], environ.Environ()))
	}
	os.Exit(install.Run(full, append([]string{"get-token"}, args...), environ.Environ()))
}
