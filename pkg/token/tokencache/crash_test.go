package tokencache

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// crashEntries are the two entries the writer alternates: big enough for
// several keyring chunks, different in every chunk.
func crashEntries(t testing.TB) [2][]byte {
	var out [2][]byte
	for i, c := range []string{"a", "b"} {
		b, err := (&Entry{IDToken: strings.Repeat(c, 6000), RefreshToken: "rt-" + c}).Encode()
		require.NoError(t, err)
		out[i] = b
	}
	return out
}

func crashStore(kind, dir string) Store {
	if kind == StorageKeyring {
		return NewKeyring()
	}
	return NewDisk(dir)
}

// TestCrashWriterHelper is the process the crash test kills: it writes the
// two entries in turn, forever.
func TestCrashWriterHelper(t *testing.T) {
	kind := os.Getenv("KI_CRASH_WRITER")
	if kind == "" {
		t.Skip("run by TestCrashSafety")
	}
	s := crashStore(kind, os.Getenv("KI_CRASH_DIR"))
	entries := crashEntries(t)
	for i := 0; ; i++ {
		if err := s.Put(context.Background(), "crash", entries[i%2]); err != nil {
			os.Exit(3)
		}
		if i == 0 {
			os.Stdout.WriteString("ready\n")
		}
	}
}

// TestCrashSafety kills the writer with SIGKILL at random points of its
// writes, 200 times, and reads after each: the entry is always one of the
// two whole entries, never half of one, and the store keeps working.
// The keyring variant needs a Secret Service: test/e2e/run.sh runs it in
// its D-Bus session with KI_TEST_KEYRING=1.
func TestCrashSafety(t *testing.T) {
	kinds := []string{StorageDisk}
	if os.Getenv("KI_TEST_KEYRING") == "1" {
		kinds = append(kinds, StorageKeyring)
	}
	const kills = 200
	entries := crashEntries(t)
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			s := crashStore(kind, dir)
			t.Cleanup(func() { _ = s.Delete(context.Background(), "crash") })
			outcome := map[string]int{}
			for i := range kills {
				cmd := exec.Command(os.Args[0], "-test.run=^TestCrashWriterHelper$")
				cmd.Env = append(os.Environ(), "KI_CRASH_WRITER="+kind, "KI_CRASH_DIR="+dir)
				out, err := cmd.StdoutPipe()
				require.NoError(t, err)
				require.NoError(t, cmd.Start())
				ready := make(chan bool, 1)
				go func() { ready <- bufio.NewScanner(out).Scan() }()
				select {
				case ok := <-ready:
					require.True(t, ok, "the writer made its first write")
				case <-time.After(20 * time.Second):
					_ = cmd.Process.Kill()
					t.Fatal("the writer made no write within 20 s")
				}
				// A disk write takes well under a millisecond, a keyring
				// write of 4 chunks and a header some 20 ms: kill within a
				// few writes, at any point of one.
				window := 15_000
				if kind == StorageKeyring {
					window = 80_000
				}
				time.Sleep(time.Duration(rand.IntN(window)) * time.Microsecond)
				require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
				_ = cmd.Wait()

				got, err := s.Get(context.Background(), "crash")
				switch {
				case err == nil && bytes.Equal(got, entries[0]):
					outcome["entry a"]++
				case err == nil && bytes.Equal(got, entries[1]):
					outcome["entry b"]++
				case errors.Is(err, ErrCorrupt):
					t.Fatalf("kill %d: corrupt entry after a crash: %v", i, err)
				case err != nil:
					t.Fatalf("kill %d: reading after a crash: %v", i, err)
				default:
					t.Fatalf("kill %d: %d bytes that are neither entry", i, len(got))
				}
				_, err = DecodeEntry(got)
				require.NoError(t, err)
			}
			// The next run works: a write and a read after the last kill;
			// the write removes killed writers' temporary files once stale.
			leftovers, _ := filepath.Glob(filepath.Join(dir, ".tmp-*"))
			old := time.Now().Add(-time.Minute)
			for _, f := range leftovers {
				require.NoError(t, os.Chtimes(f, old, old))
			}
			require.NoError(t, s.Put(context.Background(), "crash", entries[0]))
			got, err := s.Get(context.Background(), "crash")
			require.NoError(t, err)
			assert.Equal(t, entries[0], got)
			after, _ := filepath.Glob(filepath.Join(dir, ".tmp-*"))
			t.Logf("%s: %d kills during writes: %v; the next write and read work; temporary files of killed writers: %d, %d after the next write", kind, kills, outcome, len(leftovers), len(after))
			assert.Empty(t, after, "stale temporary files removed")
			assert.Equal(t, kills, outcome["entry a"]+outcome["entry b"])
		})
	}
}
