package tokencache

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	gokeyring "github.com/zalando/go-keyring"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/environ"
)

// KeyringService is the service name of every item this program stores.
const KeyringService = "kubectl-impersonate"

// ErrUnavailable means the OS keyring cannot be used here: no Secret Service
// on the session bus, a locked collection that prompts, no answer in time.
var ErrUnavailable = errors.New("OS keyring unavailable")

// DefaultKeyringTimeout bounds every keyring call. A locked Secret Service
// collection waits on an unlock prompt with no timeout of its own, which in a
// headless session is forever.
const DefaultKeyringTimeout = 2 * time.Second

// chunkSize is the largest value stored in one keyring item. Windows
// refuses passwords over 2560 bytes; macOS's security(1) refuses a command
// line over 4096 bytes after go-keyring base64-encodes the value, which allows
// about 2900 bytes. ID tokens with many groups are larger than both.
const chunkSize = 2048

const (
	singlePrefix  = "ki1:"
	chunkedPrefix = "ki1-chunked:"
)

// KeyringAPI is the part of go-keyring used here; tests substitute it.
type KeyringAPI interface {
	Get(service, user string) (string, error)
	Set(service, user, password string) error
	Delete(service, user string) error
	DeleteAll(service string) error
}

type goKeyring struct{}

func (goKeyring) Get(s, u string) (string, error) { return gokeyring.Get(s, u) }
func (goKeyring) Set(s, u, p string) error        { return gokeyring.Set(s, u, p) }
func (goKeyring) Delete(s, u string) error        { return gokeyring.Delete(s, u) }
func (goKeyring) DeleteAll(s string) error        { return gokeyring.DeleteAll(s) }

// Keyring keeps entries in the OS keyring (Secret Service, macOS Keychain,
// Windows Credential Manager). Values longer than one item allows are split
// over several items: a header item names a generation, a count and a
// SHA-256, and the chunks are written before the header, so a reader sees the
// old value, the new one, or a checksum mismatch (treated as a miss), never a
// wrong token.
type Keyring struct {
	API       KeyringAPI
	Timeout   time.Duration
	ChunkSize int
	// available reports quickly, without D-Bus, whether a keyring can exist.
	available func() error

	mu sync.Mutex
	// failed is the first ErrUnavailable of this process: later calls
	// fail at once, so a process waits for a hung keyring only once.
	failed error
}

// Failure is why the keyring was found unusable in this process, if it was.
func (k *Keyring) Failure() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.failed
}

func (k *Keyring) fail(err error) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.failed == nil {
		k.failed = err
	}
	return err
}

// EnvKeyringUnavailable carries, from the fast get-token binary to the
// full one it hands a call to, why the keyring just failed: the full
// binary then treats it as unavailable at once instead of waiting for it a
// second time.
const EnvKeyringUnavailable = "KUBECTL_IMPERSONATE_KEYRING_UNAVAILABLE"

// NewKeyring returns a Keyring on the OS keyring.
func NewKeyring() *Keyring {
	return &Keyring{API: goKeyring{}, Timeout: DefaultKeyringTimeout, ChunkSize: chunkSize, available: func() error {
		if why := environ.Getenv(EnvKeyringUnavailable); why != "" {
			return errors.New(strings.TrimPrefix(why, ErrUnavailable.Error()+": "))
		}
		return platformKeyringAvailable()
	}}
}

func (k *Keyring) Name() string { return StorageKeyring }

// call runs fn with the timeout; a keyring stuck on a prompt leaves a
// goroutine behind, which the short-lived process drops on exit.
func (k *Keyring) call(ctx context.Context, what string, fn func() error) error {
	if err := k.Failure(); err != nil {
		return err
	}
	if k.available != nil {
		if err := k.available(); err != nil {
			return k.fail(fmt.Errorf("%w: %v", ErrUnavailable, err))
		}
	}
	timeout := k.Timeout
	if timeout <= 0 {
		timeout = DefaultKeyringTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		if err == nil || errors.Is(err, gokeyring.ErrNotFound) || errors.Is(err, gokeyring.ErrSetDataTooBig) {
			return err
		}
		return k.fail(fmt.Errorf("%w: %s: %v", ErrUnavailable, what, err))
	case <-ctx.Done():
		return k.fail(fmt.Errorf("%w: %s did not answer within %s (is the keyring locked?)", ErrUnavailable, what,
			timeout))
	}
}

func (k *Keyring) get(ctx context.Context, user string) (string, error) {
	var v string
	get := k.API.Get
	if fast := fastGetter(k.API); fast != nil {
		get = fast
	}
	err := k.call(ctx, "keyring read", func() error {
		var err error
		v, err = get(KeyringService, user)
		return err
	})
	if errors.Is(err, gokeyring.ErrNotFound) {
		return "", ErrNotFound
	}
	return v, err
}

func (k *Keyring) set(ctx context.Context, user, value string) error {
	return k.call(ctx, "keyring write", func() error { return k.API.Set(KeyringService, user, value) })
}

func (k *Keyring) del(ctx context.Context, user string) error {
	err := k.call(ctx, "keyring delete", func() error { return k.API.Delete(KeyringService, user) })
	if errors.Is(err, gokeyring.ErrNotFound) {
		return nil
	}
	return err
}

type chunkHeader struct {
	gen   string
	count int
	sum   string
}

func (h chunkHeader) String() string {
	return fmt.Sprintf("%s%s:%d:%s", chunkedPrefix, h.gen, h.count, h.sum)
}

func (h chunkHeader) chunkUser(id string, i int) string {
	return id + "/" + h.gen + "/" + strconv.Itoa(i)
}

func parseChunkHeader(v string) (chunkHeader, bool) {
	parts := strings.Split(strings.TrimPrefix(v, chunkedPrefix), ":")
	if len(parts) != 3 {
		return chunkHeader{}, false
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil || n < 1 || n > 1000 || parts[0] == "" || len(parts[2]) != 64 {
		return chunkHeader{}, false
	}
	return chunkHeader{gen: parts[0], count: n, sum: parts[2]}, true
}

func (k *Keyring) Get(ctx context.Context, id string) ([]byte, error) {
	v, err := k.get(ctx, id)
	if err != nil {
		return nil, err
	}
	switch {
	case strings.HasPrefix(v, singlePrefix):
		return []byte(strings.TrimPrefix(v, singlePrefix)), nil
	case strings.HasPrefix(v, chunkedPrefix):
		h, ok := parseChunkHeader(v)
		if !ok {
			return nil, fmt.Errorf("%w: bad keyring chunk header", ErrCorrupt)
		}
		var b strings.Builder
		for i := range h.count {
			part, err := k.get(ctx, h.chunkUser(id, i))
			if errors.Is(err, ErrNotFound) {
				// A writer replaced this generation while we read it.
				return nil, ErrNotFound
			}
			if err != nil {
				return nil, err
			}
			b.WriteString(part)
		}
		sum := sha256.Sum256([]byte(b.String()))
		if hex.EncodeToString(sum[:]) != h.sum {
			return nil, fmt.Errorf("%w: keyring chunks do not match their checksum", ErrCorrupt)
		}
		return []byte(b.String()), nil
	default:
		return nil, fmt.Errorf("%w: unknown keyring value format", ErrCorrupt)
	}
}

func (k *Keyring) Put(ctx context.Context, id string, data []byte) error {
	size := k.ChunkSize
	if size <= 0 {
		size = chunkSize
	}
	old, _ := k.get(ctx, id) // to clean up the chunks it names
	value := singlePrefix + string(data)
	if len(value) <= size {
		if err := k.set(ctx, id, value); err != nil {
			return fmt.Errorf("storing token in keyring: %w", err)
		}
	} else if err := k.putChunked(ctx, id, data, size); err != nil {
		return err
	}
	if h, ok := parseChunkHeader(old); ok && strings.HasPrefix(old, chunkedPrefix) {
		k.deleteChunks(ctx, id, h)
	}
	return nil
}

func (k *Keyring) putChunked(ctx context.Context, id string, data []byte, size int) error {
	gen := make([]byte, 4)
	if _, err := rand.Read(gen); err != nil {
		return fmt.Errorf("generating keyring chunk generation: %w", err)
	}
	sum := sha256.Sum256(data)
	h := chunkHeader{gen: hex.EncodeToString(gen), count: (len(data) + size - 1) / size,
		sum: hex.EncodeToString(sum[:])}
	for i := range h.count {
		end := min((i+1)*size, len(data))
		if err := k.set(ctx, h.chunkUser(id, i), string(data[i*size:end])); err != nil {
			k.deleteChunks(ctx, id, chunkHeader{gen: h.gen, count: i})
			return fmt.Errorf("storing token chunk %d of %d in keyring: %w", i+1, h.count, err)
		}
	}
	if err := k.set(ctx, id, h.String()); err != nil {
		k.deleteChunks(ctx, id, h)
		return fmt.Errorf("storing token in keyring: %w", err)
	}
	return nil
}

func (k *Keyring) deleteChunks(ctx context.Context, id string, h chunkHeader) {
	for i := range h.count {
		_ = k.del(ctx, h.chunkUser(id, i))
	}
}

func (k *Keyring) Delete(ctx context.Context, id string) error {
	v, err := k.get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if h, ok := parseChunkHeader(v); ok && strings.HasPrefix(v, chunkedPrefix) {
		k.deleteChunks(ctx, id, h)
	}
	return k.del(ctx, id)
}

func (k *Keyring) DeleteAll(ctx context.Context) error {
	err := k.call(ctx, "keyring delete", func() error { return k.API.DeleteAll(KeyringService) })
	if errors.Is(err, gokeyring.ErrNotFound) {
		return nil
	}
	return err
}
