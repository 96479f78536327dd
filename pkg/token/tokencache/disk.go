package tokencache

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/safefile"
)

// Disk keeps one file per entry, mode 0600 in a 0700 directory. Writes go to
// a temporary file that is synced and renamed over the entry, so a crash at
// any point leaves either the old entry or the new one, never half of one.
type Disk struct {
	Dir string
}

// NewDisk returns a Disk store in dir.
func NewDisk(dir string) *Disk { return &Disk{Dir: dir} }

func (d *Disk) Name() string { return StorageDisk }

// isEntryFile and isTempFile recognise the files this store writes. They
// are not regexps: package-level regexps compile at start-up, on every
// kubectl call.
func isEntryFile(name string) bool {
	id, ok := strings.CutSuffix(name, ".json")
	return ok && isID(id)
}

func isTempFile(name string) bool {
	rest, ok := strings.CutPrefix(name, safefile.TempPrefix)
	if !ok || len(rest) < 66 || !isID(rest[:64]) {
		return false
	}
	// ".tmp-ID.json-N" (config.WriteFileAtomic), or ".tmp-ID-N" as releases
	// before it wrote them: a writer killed mid-write may have left one, a
	// refresh token inside, and logout must find it.
	return strings.HasPrefix(rest[64:], ".json-") || rest[64] == '-'
}

func isID(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func (d *Disk) path(id string) string { return filepath.Join(d.Dir, id+".json") }

// Get reads the entry only from a directory and a file of this user's
// that no one else may write (nor read, for the file): an entry planted in
// a shared directory by another local user is never handed to kubectl.
func (d *Disk) Get(_ context.Context, id string) ([]byte, error) {
	p := d.path(id)
	// The directory first: in one another user may write, even opening a
	// planted FIFO would block.
	if err := checkOwnDir(d.Dir); errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	} else if err != nil {
		return nil, err
	}
	b, _, err := safefile.ReadRegular(
		"token cache file", p, maxEntrySize, safefile.ReadOptions{NoFollow: true, Rule: safefile.Secret})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, ErrNotFound
	case errors.Is(err, safefile.ErrTooLarge):
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	case err != nil:
		// Another user's, readable by others, a symlink (ELOOP), a FIFO, a
		// directory: not a file this store wrote.
		return nil, fmt.Errorf("token cache file %s is not a private file of yours: refusing to read it (%v); delete "+
			"it", p, err)
	}
	return b, err
}

// maxEntrySize bounds what is read of an entry: tokens of a few KiB each.
const maxEntrySize = 1 << 20

// checkOwnDir refuses a cache directory another user owns or may write.
func checkOwnDir(dir string) error {
	return safefile.CheckDir("token cache directory", dir, true, safefile.Private)
}

func (d *Disk) Put(_ context.Context, id string, data []byte) error {
	if err := EnsureDir(d.Dir); err != nil {
		return err
	}
	if err := safefile.Write(d.path(id), data, safefile.Options{Mode: 0o600, Sync: true}); err != nil {
		return fmt.Errorf("token cache: %w", err)
	}
	d.removeStaleTemps(id)
	return nil
}

func (d *Disk) Delete(_ context.Context, id string) error {
	if err := os.Remove(d.path(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("deleting token cache file: %w", err)
	}
	return nil
}

// DeleteAll removes the entry files (and stray temporary files) this
// program wrote in Dir, and nothing else.
func (d *Disk) DeleteAll(ctx context.Context) error {
	entries, err := os.ReadDir(d.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing token cache directory: %w", err)
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if !isEntryFile(name) && !isTempFile(name) {
			continue
		}
		if err := os.Remove(filepath.Join(d.Dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("deleting token cache files: %w", errors.Join(errs...))
	}
	return nil
}

// EnsureDir creates dir with mode 0700. An existing directory must be the
// user's own and writable by no one else; its mode is not changed (a
// --token-cache-dir naming some other directory must not have its mode
// rewritten): the entries in it are 0600 files.
func EnsureDir(dir string) error {
	if err := safefile.MkdirPrivate(dir); err != nil {
		return fmt.Errorf("creating token cache directory: %w", err)
	}
	return checkOwnDir(dir)
}

// staleTempAge is how old a temporary file must be to belong to a writer
// that died (killed mid-write): live writers rename theirs within
// milliseconds.
const staleTempAge = 10 * time.Second

// removeStaleTemps deletes the temporary files of id that killed writers
// left behind.
func (d *Disk) removeStaleTemps(id string) {
	matches, _ := filepath.Glob(filepath.Join(d.Dir, safefile.TempPrefix+id+"*"))
	for _, m := range matches {
		// This entry's, under either name (see isTempFile).
		rest := strings.TrimPrefix(filepath.Base(m), safefile.TempPrefix+id)
		if !strings.HasPrefix(rest, ".json-") && !strings.HasPrefix(rest, "-") {
			continue
		}
		if fi, err := os.Lstat(m); err == nil && time.Since(fi.ModTime()) > staleTempAge {
			_ = os.Remove(m)
		}
	}
}
