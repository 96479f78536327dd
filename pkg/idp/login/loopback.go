package login

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"syscall"
)

// holdIPv6Loopback closes the other half of the loopback redirect. The
// browser login redirects to http://localhost:PORT (the URI providers have
// registered), and browsers try ::1 before 127.0.0.1, while oauth2cli
// listens on 127.0.0.1:PORT only: another local user listening on
// [::1]:PORT would receive the code and the state (RFC 8252 §8.3). So this
// listens on [::1]:PORT too and hands each connection to the loopback
// server. If someone else already listens there, the login stops before
// the browser opens. A machine without IPv6 loopback needs nothing: the
// browser cannot reach ::1 either. The returned stop closes the listener
// and waits for its connections to finish.
func holdIPv6Loopback(redirect string) (stop func(), err error) {
	u, err := url.Parse(redirect)
	if err != nil || u.Hostname() != "localhost" {
		return func() {}, nil // an IP literal names one address only
	}
	port := u.Port()
	l, err := net.Listen("tcp6", net.JoinHostPort("::1", port))
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("another program listens on [::1]:%s, where the browser would send this login's code "+
			"(localhost): refusing to log in; stop it, or use --listen-address with another port", port)
	}
	if err != nil {
		return func() {}, nil // no IPv6 loopback here
	}
	target := net.JoinHostPort("127.0.0.1", port)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { forward(ctx, c, target) })
		}
	})
	return func() {
		_ = l.Close()
		cancel()
		wg.Wait()
	}, nil
}

// forward copies one connection to the loopback server and back.
func forward(ctx context.Context, c net.Conn, target string) {
	defer func() { _ = c.Close() }()
	var d net.Dialer
	t, err := d.DialContext(ctx, "tcp4", target)
	if err != nil {
		return
	}
	defer func() { _ = t.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = c.Close(); _ = t.Close() })
	defer stop()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(t, c)
		if tc, ok := t.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		close(done)
	}()
	_, _ = io.Copy(c, t)
	_ = c.Close()
	<-done
}
