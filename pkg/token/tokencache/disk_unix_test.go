//go:build unix

package tokencache

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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

// TestDeleteAllRemovesTempFilesOfEitherName: a writer killed mid-write
// leaves a temporary file (a refresh token inside); logout --all removes it,
// under the name config.WriteFileAtomic gives and under the one releases
// before it gave, and nothing else.
func TestDeleteAllRemovesTempFilesOfEitherName(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o700))
	id := strings.Repeat("ab", 32)
	names := []string{id + ".json", ".tmp-" + id + ".json-123", ".tmp-" + id + "-456"}
	for _, n := range append(names, "someone-elses.txt", ".tmp-notanid-1") {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o600))
	}
	require.NoError(t, NewDisk(dir).DeleteAll(context.Background()))
	left, _ := os.ReadDir(dir)
	var got []string
	for _, e := range left {
		got = append(got, e.Name())
	}
	assert.ElementsMatch(t, []string{"someone-elses.txt", ".tmp-notanid-1"}, got)
}
