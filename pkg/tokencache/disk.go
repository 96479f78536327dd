package tokencache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/config"
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
	rest, ok := strings.CutPrefix(name, ".tmp-")
	return ok && len(rest) > 65 && isID(rest[:64]) && rest[64] == '-'
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
	f, err := openNoFollow(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		// A symlink (ELOOP) among them: not a file this store wrote.
		return nil, fmt.Errorf("token cache file %s is not a private file of yours: refusing to read it (%v); delete it", p, err)
	}
	defer func() { _ = f.Close() }()
	// The descriptor's own metadata: the file checked is the file read.
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading token cache file: %w", err)
	}
	if !fi.Mode().IsRegular() || !config.OwnedBySelf(fi) || fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("token cache file %s is not a private file of yours (mode %s): refusing to read it; delete it", p, fi.Mode())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxEntrySize+1))
	if err != nil {
		return nil, fmt.Errorf("reading token cache file: %w", err)
	}
	if len(b) > maxEntrySize {
		return nil, fmt.Errorf("%w: %s is larger than %d KiB", ErrCorrupt, p, maxEntrySize>>10)
	}
	return b, nil
}

// maxEntrySize bounds what is read of an entry: tokens of a few KiB each.
const maxEntrySize = 1 << 20

// checkOwnDir refuses a cache directory another user owns or may write.
func checkOwnDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("checking token cache directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("token cache directory %s is not a directory", dir)
	}
	return config.CheckPrivate("token cache directory", dir, fi)
}

func (d *Disk) Put(_ context.Context, id string, data []byte) error {
	if err := EnsureDir(d.Dir); err != nil {
		return err
	}
	f, err := os.CreateTemp(d.Dir, ".tmp-"+id+"-*")
	if err != nil {
		return fmt.Errorf("creating token cache file: %w", err)
	}
	tmp := f.Name()
	defer func() { _ = os.Remove(tmp) }() // a no-op after the rename
	// CreateTemp makes the file 0600 already; the Chmod guards against an
	// unusual umask-less platform default.
	if err := f.Chmod(0o600); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		_ = f.Close()
		return fmt.Errorf("setting token cache file mode: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("writing token cache file: %w", err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("syncing token cache file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("closing token cache file: %w", err)
	}
	if err := os.Rename(tmp, d.path(id)); err != nil {
		return fmt.Errorf("replacing token cache file: %w", err)
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
	if err := os.MkdirAll(dir, 0o700); err != nil {
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
	matches, _ := filepath.Glob(filepath.Join(d.Dir, ".tmp-"+id+"-*"))
	for _, m := range matches {
		if fi, err := os.Lstat(m); err == nil && time.Since(fi.ModTime()) > staleTempAge {
			_ = os.Remove(m)
		}
	}
}
