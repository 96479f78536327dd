// Command idp serves the in-process test OIDC provider (internal/oidctest)
// on 127.0.0.1 for the benchmark script: it prints the issuer URL and the
// client credentials as shell assignments, then serves until stopped. Its
// authorization endpoint approves at once, so a browser stand-in such as
// "curl -sL" completes a real authorization code login.
//
// "idp expire FILE" instead rewrites a disk cache entry as expired (keeping
// its refresh token), to benchmark the refresh path.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/oidctest"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "expire" {
		if err := expire(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "idp expire:", err)
			os.Exit(1)
		}
		return
	}
	srv, err := oidctest.NewServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, "idp:", err)
		os.Exit(1)
	}
	defer srv.Close()
	fmt.Printf("ISSUER=%s\nCLIENT_ID=%s\nCLIENT_SECRET=%s\n", srv.Issuer(), srv.ClientID, srv.ClientSecret)
	_ = os.Stdout.Sync()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
}

func expire(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	e, err := tokencache.DecodeEntry(b)
	if err != nil {
		return err
	}
	e.IDTokenExpiry = time.Now().Add(-time.Hour)
	e.AccessTokenExpiry = e.IDTokenExpiry
	if b, err = e.Encode(); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}
