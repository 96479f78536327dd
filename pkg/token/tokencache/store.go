package tokencache

import (
	"context"
	"errors"
	"fmt"
)

// ErrNotFound means the store holds no entry for the id.
var ErrNotFound = errors.New("no cached token")

// Store keeps encoded entries by id. Implementations: Keyring, Disk, None and
// Auto (keyring with a disk fallback).
type Store interface {
	// Name is shown to the user ("keyring", "disk", ...).
	Name() string
	Get(ctx context.Context, id string) ([]byte, error)
	Put(ctx context.Context, id string, data []byte) error
	// Delete removes the entry; a missing entry is not an error.
	Delete(ctx context.Context, id string) error
	// DeleteAll removes every entry this program stored.
	DeleteAll(ctx context.Context) error
}

// Storage names accepted by --token-cache-storage.
const (
	StorageAuto    = "auto"
	StorageKeyring = "keyring"
	StorageDisk    = "disk"
	StorageNone    = "none"
)

// Storages lists the accepted storage names.
var Storages = []string{StorageAuto, StorageKeyring, StorageDisk, StorageNone}

// Options configures New.
type Options struct {
	Storage string
	// Dir holds disk entries and the lock files of every storage.
	Dir string
	// Notify receives one-line notices for the user (a fallback to disk, ...).
	Notify func(string)
}

// New returns the Store for opts.Storage.
func New(opts Options) (Store, error) {
	notify := opts.Notify
	if notify == nil {
		notify = func(string) {}
	}
	switch opts.Storage {
	case StorageAuto, "":
		return &Auto{Keyring: NewKeyring(), Disk: NewDisk(opts.Dir), Notify: notify}, nil
	case StorageKeyring:
		return NewKeyring(), nil
	case StorageDisk:
		return NewDisk(opts.Dir), nil
	case StorageNone:
		return None{}, nil
	default:
		return nil, fmt.Errorf("unknown token cache storage %q (want one of auto, keyring, disk, none)", opts.Storage)
	}
}

// None caches nothing: every call logs in again.
type None struct{}

func (None) Name() string                                { return StorageNone }
func (None) Get(context.Context, string) ([]byte, error) { return nil, ErrNotFound }
func (None) Put(context.Context, string, []byte) error   { return nil }
func (None) Delete(context.Context, string) error        { return nil }
func (None) DeleteAll(context.Context) error             { return nil }

// Auto uses the OS keyring and falls back to disk when the keyring is absent,
// locked or does not answer in time.
type Auto struct {
	Keyring *Keyring
	Disk    *Disk
	Notify  func(string)

	// found is where the last Get found its entry.
	found string
}

// Where names the storage the last Get found its entry in ("" if none).
func (a *Auto) Where() string { return a.found }

func (a *Auto) Name() string { return StorageAuto }

// Get reads the keyring and the disk, where a fallback wrote when the
// keyring could not be used: of two entries, the one whose token was
// obtained later (the keyring's when alike, or when the disk's does not
// decode). A keyring write that failed (timed out under load) leaves the
// keyring's older entry in place, whose refresh token the provider may
// have rotated away since: read first, it would send the person back to a
// browser. A keyring write that succeeds removes the disk's copy, so the
// disk holds one only after a fallback: on the cached path, that is one
// more file looked up.
func (a *Auto) Get(ctx context.Context, id string) ([]byte, error) {
	kb, kerr := a.Keyring.Get(ctx, id)
	db, derr := a.Disk.Get(ctx, id)
	keyring := kerr == nil || errors.Is(kerr, ErrCorrupt)
	if derr == nil && (!keyring || newerEntry(db, kb)) {
		a.found = StorageDisk
		return db, nil
	}
	if keyring {
		a.found = StorageKeyring
		return kb, kerr
	}
	return db, derr
}

// newerEntry says whether a's token was obtained after b's, or a decodes
// and b does not.
func newerEntry(a, b []byte) bool {
	ea, err := DecodeEntry(a)
	if err != nil {
		return false
	}
	eb, err := DecodeEntry(b)
	if err != nil {
		return true
	}
	return ea.ObtainedAt.After(eb.ObtainedAt)
}

// Failure is why the keyring was found unusable in this process, if it was.
func (a *Auto) Failure() error { return a.Keyring.Failure() }

// Put writes to the keyring, or to disk with a notice when the keyring
// cannot be used. A disk copy left by an earlier fallback is removed once the
// keyring holds the entry.
func (a *Auto) Put(ctx context.Context, id string, data []byte) error {
	kerr := a.Keyring.Put(ctx, id, data)
	if kerr == nil {
		_ = a.Disk.Delete(ctx, id)
		return nil
	}
	if err := a.Disk.Put(ctx, id, data); err != nil {
		return fmt.Errorf("keyring: %v; disk: %w", kerr, err)
	}
	a.Notify(fmt.Sprintf("the OS keyring cannot be used (%v); token cached on disk in %s instead (use "+
		"--token-cache-storage to choose)", kerr, a.Disk.Dir))
	return nil
}

// Delete removes the entry from both places. A keyring that cannot be used
// holds nothing this store could reach, so that is not an error here.
func (a *Auto) Delete(ctx context.Context, id string) error {
	kerr := a.Keyring.Delete(ctx, id)
	if errors.Is(kerr, ErrUnavailable) {
		kerr = nil
	}
	return joinStoreErrors(kerr, a.Disk.Delete(ctx, id))
}

func (a *Auto) DeleteAll(ctx context.Context) error {
	kerr := a.Keyring.DeleteAll(ctx)
	if errors.Is(kerr, ErrUnavailable) {
		kerr = nil
	}
	return joinStoreErrors(kerr, a.Disk.DeleteAll(ctx))
}

func joinStoreErrors(keyringErr, diskErr error) error {
	switch {
	case keyringErr != nil && diskErr != nil:
		return fmt.Errorf("keyring: %v; disk: %w", keyringErr, diskErr)
	case keyringErr != nil:
		return fmt.Errorf("keyring: %w", keyringErr)
	case diskErr != nil:
		return fmt.Errorf("disk: %w", diskErr)
	}
	return nil
}
