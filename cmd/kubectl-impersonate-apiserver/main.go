// Command kubectl-impersonate-apiserver is kubectl-impersonate with
// kube-apiserver's own code linked in: its JWT authenticator and
// configuration types, for claims, proxy and setup --authentication-config.
// kubectl-impersonate hands those commands to it, with the same arguments,
// so that every other command starts without that code's package
// initialisers; the proxy's image runs it directly. See pkg/host/install.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/kubecode/linked"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cmd.Execute(ctx, os.Args[1:], genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr},
		linked.Code{})
	stop()
	os.Exit(code)
}
