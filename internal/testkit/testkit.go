// Package testkit is what the tests of several packages share and no
// production code uses: a free loopback port, a buffer a test reads while
// a server writes it, and a kubeconfig as kubelogin's README sets one up.
// One of each (TestOneTestHelper, test/repo).
package testkit

import (
	"bytes"
	"net"
	"sync"
	"testing"
)

// FreePort is a TCP port free on 127.0.0.1 now: the kernel's pick, closed
// at once for a test server to bind next.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// MustFreePort is FreePort for a test: none free fails t.
func MustFreePort(t testing.TB) int {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatalf("finding a free port on 127.0.0.1: %v", err)
	}
	return port
}

// SyncBuffer is a buffer safe for a writer and a reader at once (a
// server's log or stderr that the test reads while it runs).
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
