//go:build unix

package tokencache

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDiskGetDoesNotWaitOnAFIFO: an entry that is a FIFO is refused at
// once, not waited on.
func TestDiskGetDoesNotWaitOnAFIFO(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	dir := filepath.Join(t.TempDir(), "c")
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, id+".json"), 0o600))
	done := make(chan error, 1)
	go func() { _, err := NewDisk(dir).Get(context.Background(), id); done <- err }()
	select {
	case err := <-done:
		require.ErrorContains(t, err, "not a private file of yours")
	case <-time.After(5 * time.Second):
		t.Fatal("Get waited on a FIFO")
	}
}
