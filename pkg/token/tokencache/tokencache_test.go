package tokencache

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	gokeyring "github.com/zalando/go-keyring"
)

func TestKeyID(t *testing.T) {
	base := Key{Issuer: "https://idp.example", ClientID: "kube", Scopes: []string{"email", "groups"}, GrantType: "authcode",
		Extra: map[string]string{"a": "1", "b": "2", "c": "3", "d": "4"}}
	tests := []struct {
		name     string
		other    Key
		wantSame bool
	}{
		{name: "identical", other: base, wantSame: true},
		{name: "scopes reordered and repeated", other: func() Key {
			k := base
			k.Scopes = []string{"groups", "email", "groups", ""}
			return k
		}(), wantSame: true},
		{name: "empty extra value ignored", other: func() Key {
			k := base
			k.Extra = map[string]string{"d": "4", "c": "3", "b": "2", "a": "1", "e": ""}
			return k
		}(), wantSame: true},
		{name: "other issuer", other: func() Key { k := base; k.Issuer = "https://idp.example/"; return k }()},
		{name: "other client", other: func() Key { k := base; k.ClientID = "kube2"; return k }()},
		{name: "other scope", other: func() Key { k := base; k.Scopes = []string{"email"}; return k }()},
		{name: "other grant", other: func() Key { k := base; k.GrantType = "device-code"; return k }()},
		{name: "access token", other: func() Key { k := base; k.UseAccessToken = true; return k }()},
		{name: "other extra", other: func() Key {
			k := base
			k.Extra = map[string]string{"a": "1", "b": "2", "c": "3", "d": "5"}
			return k
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := base.ID()
			assert.Len(t, id, 64)
			if tt.wantSame {
				assert.Equal(t, id, tt.other.ID())
			} else {
				assert.NotEqual(t, id, tt.other.ID())
			}
		})
	}
}

// TestKeyIDStableAcrossMapOrder guards against the kubelogin bug where a key
// holding a map hashed differently from run to run.
func TestKeyIDStableAcrossMapOrder(t *testing.T) {
	k := Key{Issuer: "i", ClientID: "c", Extra: map[string]string{"w": "1", "x": "2", "y": "3", "z": "4"}}
	seen := map[string]int{}
	for range 200 {
		seen[k.ID()]++
	}
	assert.Len(t, seen, 1)
}

func TestEntryRoundTrip(t *testing.T) {
	e := &Entry{IDToken: "id", RefreshToken: "r", IDTokenExpiry: time.Unix(2000000000, 0).UTC(), Scopes: []string{"openid"}}
	b, err := e.Encode()
	require.NoError(t, err)
	got, err := DecodeEntry(b)
	require.NoError(t, err)
	assert.Equal(t, e, got)
}

func TestDecodeEntryCorrupt(t *testing.T) {
	tests := []struct {
		name          string
		data          string
		wantErrSubstr string
	}{
		{name: "truncated", data: `{"version":1,"id_token":"ab`, wantErrSubstr: "unexpected end"},
		{name: "garbage", data: "\x00\x01", wantErrSubstr: "invalid character"},
		{name: "other version", data: `{"version":7,"id_token":"x"}`, wantErrSubstr: "version 7"},
		{name: "no token", data: `{"version":1}`, wantErrSubstr: "holds no token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeEntry([]byte(tt.data))
			require.ErrorIs(t, err, ErrCorrupt)
			assert.ErrorContains(t, err, tt.wantErrSubstr)
		})
	}
}

const testID = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestDisk(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "cache")
	d := NewDisk(dir)

	_, err := d.Get(ctx, testID)
	require.ErrorIs(t, err, ErrNotFound)

	require.NoError(t, d.Put(ctx, testID, []byte("one")))
	require.NoError(t, d.Put(ctx, testID, []byte("two")))
	got, err := d.Get(ctx, testID)
	require.NoError(t, err)
	assert.Equal(t, "two", string(got))

	fi, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	fi, err = os.Stat(filepath.Join(dir, testID+".json"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	// No temporary files are left behind.
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1)

	// DeleteAll removes our entries and leaves unrelated files.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("keep"), 0o600))
	require.NoError(t, d.DeleteAll(ctx))
	_, err = d.Get(ctx, testID)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = os.Stat(filepath.Join(dir, "notes.txt"))
	require.NoError(t, err)
	require.NoError(t, d.Delete(ctx, testID), "deleting a missing entry is not an error")
}

// TestDiskRefusesForeignFiles: the disk store neither rewrites the mode of
// a directory it did not make nor reads an entry another user could have
// planted (an entry readable or writable by others, a symlink, a directory
// writable by others). Another local user's files are tested for real in
// TestDiskRefusesAnotherUsersEntry (it needs two uids).
func TestDiskRefusesForeignFiles(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tt := range []struct {
		name    string
		plant   func(t *testing.T, dir string)
		wantErr string
	}{
		{"own private entry", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, id+".json"), []byte("x"), 0o600))
		}, ""},
		{"entry readable by others", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, id+".json"), []byte("x"), 0o644))
		}, "not a private file of yours"},
		{"entry is a symlink", func(t *testing.T, dir string) {
			target := filepath.Join(t.TempDir(), "t")
			require.NoError(t, os.WriteFile(target, []byte("x"), 0o600))
			require.NoError(t, os.Symlink(target, filepath.Join(dir, id+".json")))
		}, "not a private file of yours"},
		{"directory writable by others", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, id+".json"), []byte("x"), 0o600))
			require.NoError(t, os.Chmod(dir, 0o777))
		}, "writable by others"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "c")
			require.NoError(t, os.Mkdir(dir, 0o700))
			tt.plant(t, dir)
			b, err := NewDisk(dir).Get(context.Background(), id)
			if tt.wantErr == "" {
				require.NoError(t, err)
				assert.Equal(t, "x", string(b))
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
			assert.Nil(t, b)
		})
	}
	t.Run("mode of an existing directory kept", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "loose")
		require.NoError(t, os.Mkdir(dir, 0o755))
		require.NoError(t, EnsureDir(dir))
		fi, err := os.Stat(dir)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
		require.NoError(t, os.Chmod(dir, 0o777))
		require.ErrorContains(t, EnsureDir(dir), "writable by others")
	})
}

// fakeKeyring records calls and enforces a value limit like Windows does.
type fakeKeyring struct {
	mu       sync.Mutex
	items    map[string]string
	maxValue int
	hang     chan struct{} // when set, every call blocks on it
	err      error
	sets     int
	calls    int // every call, failed or not
}

func newFakeKeyring(maxValue int) *fakeKeyring {
	return &fakeKeyring{items: map[string]string{}, maxValue: maxValue}
}

func (f *fakeKeyring) wait() error {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	if f.hang != nil {
		<-f.hang
	}
	return f.err
}

func (f *fakeKeyring) Get(s, u string) (string, error) {
	if err := f.wait(); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.items[s+"\x00"+u]
	if !ok {
		return "", gokeyring.ErrNotFound
	}
	return v, nil
}

func (f *fakeKeyring) Set(s, u, p string) error {
	if err := f.wait(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.maxValue > 0 && len(p) > f.maxValue {
		return gokeyring.ErrSetDataTooBig
	}
	f.sets++
	f.items[s+"\x00"+u] = p
	return nil
}

func (f *fakeKeyring) Delete(s, u string) error {
	if err := f.wait(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.items[s+"\x00"+u]; !ok {
		return gokeyring.ErrNotFound
	}
	delete(f.items, s+"\x00"+u)
	return nil
}

func (f *fakeKeyring) DeleteAll(s string) error {
	if err := f.wait(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.items {
		if strings.HasPrefix(k, s+"\x00") {
			delete(f.items, k)
		}
	}
	return nil
}

func (f *fakeKeyring) len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.items)
}

func TestKeyringChunking(t *testing.T) {
	tests := []struct {
		name      string
		size      int
		wantItems int
	}{
		{name: "small value, one item", size: 100, wantItems: 1},
		{name: "exactly one item", size: chunkSize - len(singlePrefix), wantItems: 1},
		{name: "one byte over", size: chunkSize - len(singlePrefix) + 1, wantItems: 1 + 1},
		{name: "large token (20 KB)", size: 20_000, wantItems: 1 + 10},
		{name: "exactly two chunks", size: 2 * chunkSize, wantItems: 1 + 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			api := newFakeKeyring(2560) // Windows' limit
			k := &Keyring{API: api, Timeout: time.Second, ChunkSize: chunkSize}
			data := []byte(strings.Repeat("abcdefghij", tt.size/10+1)[:tt.size])

			require.NoError(t, k.Put(ctx, testID, data))
			got, err := k.Get(ctx, testID)
			require.NoError(t, err)
			assert.Equal(t, data, got)
			// Counted by hand for 2 KiB chunks (docs/troubleshooting.md):
			// 20,000 bytes are 10 chunks and the item that lists them.
			assert.Equal(t, tt.wantItems, api.len())

			// Replacing a chunked value with a small one removes the old chunks.
			require.NoError(t, k.Put(ctx, testID, []byte("small")))
			assert.Equal(t, 1, api.len())
			got, err = k.Get(ctx, testID)
			require.NoError(t, err)
			assert.Equal(t, "small", string(got))

			require.NoError(t, k.Put(ctx, testID, data))
			require.NoError(t, k.Delete(ctx, testID))
			assert.Equal(t, 0, api.len())
		})
	}
}

func TestKeyringCorruptChunks(t *testing.T) {
	ctx := context.Background()
	api := newFakeKeyring(0)
	k := &Keyring{API: api, Timeout: time.Second, ChunkSize: 10}
	require.NoError(t, k.Put(ctx, testID, []byte(strings.Repeat("x", 35))))
	// Tamper with one chunk: the checksum must catch it.
	api.mu.Lock()
	for name := range api.items {
		if strings.HasSuffix(name, "/1") {
			api.items[name] = "yyyyyyyyyy"
		}
	}
	api.mu.Unlock()
	_, err := k.Get(ctx, testID)
	require.ErrorIs(t, err, ErrCorrupt)

	require.NoError(t, api.Set(KeyringService, testID, "something else"))
	_, err = k.Get(ctx, testID)
	require.ErrorIs(t, err, ErrCorrupt)
}

func TestKeyringTimeout(t *testing.T) {
	api := newFakeKeyring(0)
	api.hang = make(chan struct{})
	defer close(api.hang)
	k := &Keyring{API: api, Timeout: 100 * time.Millisecond}
	start := time.Now()
	_, err := k.Get(context.Background(), testID)
	require.ErrorIs(t, err, ErrUnavailable)
	assert.ErrorContains(t, err, "did not answer within 100ms")
	assert.Less(t, time.Since(start), 2*time.Second)
}

func TestKeyringUnavailableWithoutBus(t *testing.T) {
	k := &Keyring{API: newFakeKeyring(0), available: func() error { return errors.New("no D-Bus session bus") }}
	_, err := k.Get(context.Background(), testID)
	require.ErrorIs(t, err, ErrUnavailable)
	assert.ErrorContains(t, err, "no D-Bus session bus")
}

func TestAutoFallsBackToDisk(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	api := newFakeKeyring(0)
	api.err = errors.New("org.freedesktop.DBus.Error.ServiceUnknown")
	var notices []string
	a := &Auto{Keyring: &Keyring{API: api, Timeout: time.Second}, Disk: NewDisk(dir), Notify: func(s string) { notices = append(notices, s) }}

	require.NoError(t, a.Put(ctx, testID, []byte("tok")))
	require.Len(t, notices, 1)
	assert.Contains(t, notices[0], "token cached on disk")
	assert.NotContains(t, notices[0], "tok\"")
	got, err := a.Get(ctx, testID)
	require.NoError(t, err)
	assert.Equal(t, "tok", string(got))
	assert.Equal(t, StorageDisk, a.Where())

	// This process does not wait for the keyring again.
	api.mu.Lock()
	calls := api.calls
	api.err = nil
	api.mu.Unlock()
	_, _ = a.Get(ctx, testID)
	api.mu.Lock()
	assert.Equal(t, calls, api.calls, "a failed keyring is not asked again in the same process")
	api.mu.Unlock()
	assert.ErrorIs(t, a.Failure(), ErrUnavailable)

	// The next process finds the keyring working: a write moves the entry there.
	a = &Auto{Keyring: &Keyring{API: api, Timeout: time.Second}, Disk: NewDisk(dir), Notify: func(s string) { notices = append(notices, s) }}
	require.NoError(t, a.Put(ctx, testID, []byte("tok2")))
	_, err = NewDisk(dir).Get(ctx, testID)
	require.ErrorIs(t, err, ErrNotFound)
	got, err = a.Get(ctx, testID)
	require.NoError(t, err)
	assert.Equal(t, "tok2", string(got))
	assert.Equal(t, StorageKeyring, a.Where())
	assert.Len(t, notices, 1)

	require.NoError(t, a.Delete(ctx, testID))
	_, err = a.Get(ctx, testID)
	require.ErrorIs(t, err, ErrNotFound)
}

func TestNew(t *testing.T) {
	for _, s := range Storages {
		st, err := New(Options{Storage: s, Dir: t.TempDir()})
		require.NoError(t, err)
		assert.Equal(t, s, st.Name())
	}
	_, err := New(Options{Storage: "cloud"})
	require.ErrorContains(t, err, `unknown token cache storage "cloud"`)
}

func TestLock(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	l, err := AcquireLock(ctx, dir, testID, time.Second)
	require.NoError(t, err)

	// flock locks are per open file description: a second one in the same
	// process contends just like another process would.
	_, err = AcquireLock(ctx, dir, testID, 100*time.Millisecond)
	require.ErrorContains(t, err, "another kubectl-impersonate process has held the lock")

	require.NoError(t, l.Release())
	l2, err := AcquireLock(ctx, dir, testID, time.Second)
	require.NoError(t, err)
	require.NoError(t, l2.Release())

	fi, err := os.Stat(LockPath(dir, testID))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

// TestAutoPrefersTheNewerCopy: a keyring write that fails (it timed out
// under load) leaves the keyring's older entry in place and writes the new
// one to disk. The next process must read the new one: the older entry's
// refresh token may have been rotated away by the provider (Dex answers
// "refresh token claimed twice", and the person is sent to a browser).
// A disk copy exists only when the last write fell back to it (a keyring
// write that succeeds removes it), but the choice is by when each token
// was obtained, not by that alone.
func TestAutoPrefersTheNewerCopy(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	api := newFakeKeyring(0)
	now := time.Date(2026, 11, 28, 2, 36, 0, 0, time.UTC)
	entry := func(refresh string, obtained time.Time) []byte {
		b, err := (&Entry{IDToken: "id", RefreshToken: refresh, ObtainedAt: obtained}).Encode()
		require.NoError(t, err)
		return b
	}
	process := func() *Auto {
		return &Auto{Keyring: &Keyring{API: api, Timeout: time.Second}, Disk: NewDisk(dir), Notify: func(string) {}}
	}
	older, newer := entry("rotated-away", now), entry("current", now.Add(time.Minute))

	require.NoError(t, process().Put(ctx, testID, older))
	api.mu.Lock()
	api.err = errors.New("the keyring did not answer within 2s")
	api.mu.Unlock()
	require.NoError(t, process().Put(ctx, testID, newer), "the new entry goes to disk")
	api.mu.Lock()
	api.err = nil
	api.mu.Unlock()
	got, err := process().Get(ctx, testID)
	require.NoError(t, err)
	assert.Equal(t, string(newer), string(got), "the next process reads the new entry, not the keyring's older one")

	for _, tc := range []struct {
		name          string
		keyring, disk []byte // nil: none
		want          []byte
		wantWhere     string
	}{
		{"the keyring's entry is older: the disk's", older, newer, newer, StorageDisk},
		{"the disk's entry is older: the keyring's", newer, older, newer, StorageKeyring},
		{"both alike: the keyring's", newer, newer, newer, StorageKeyring},
		{"the keyring's entry is corrupt: the disk's", []byte("{not an entry"), newer, newer, StorageDisk},
		{"the disk's entry is corrupt: the keyring's", newer, []byte("{not an entry"), newer, StorageKeyring},
		{"only the keyring's", newer, nil, newer, StorageKeyring},
		{"only the disk's", nil, newer, newer, StorageDisk},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := process()
			require.NoError(t, a.Keyring.Delete(ctx, testID))
			require.NoError(t, a.Disk.Delete(ctx, testID))
			if tc.keyring != nil {
				require.NoError(t, a.Keyring.Put(ctx, testID, tc.keyring))
			}
			if tc.disk != nil {
				require.NoError(t, a.Disk.Put(ctx, testID, tc.disk))
			}
			got, err := a.Get(ctx, testID)
			require.NoError(t, err)
			assert.Equal(t, string(tc.want), string(got))
			assert.Equal(t, tc.wantWhere, a.Where())
		})
	}
}

// A chunked value's header: 1 to 1,000 chunks, a generation and a SHA-256.
func TestParseChunkHeader(t *testing.T) {
	sum := strings.Repeat("a", 64)
	for count, ok := range map[string]bool{"1": true, "1000": true, "0": false, "1001": false, "-1": false, "x": false} {
		_, got := parseChunkHeader(chunkedPrefix + "gen:" + count + ":" + sum)
		assert.Equal(t, ok, got, "count %s", count)
	}
	_, got := parseChunkHeader(chunkedPrefix + ":1:" + sum)
	assert.False(t, got, "no generation")
	_, got = parseChunkHeader(chunkedPrefix + "gen:1:" + sum[1:])
	assert.False(t, got, "a short sum")
}

// No timeout given is the default one, not none.
func TestKeyringDefaultTimeout(t *testing.T) {
	k := &Keyring{API: newFakeKeyring(0)}
	require.NoError(t, k.Put(context.Background(), testID, []byte("v")))
	got, err := k.Get(context.Background(), testID)
	require.NoError(t, err)
	assert.Equal(t, "v", string(got))
}

// The cache's temporary files, as either release named them, and nothing
// else: the shortest (".tmp-ID-N") counts.
func TestIsTempFile(t *testing.T) {
	id := strings.Repeat("ab", 32)
	for name, want := range map[string]bool{
		".tmp-" + id + "-1": true, ".tmp-" + id + ".json-123": true, ".tmp-" + id + "-": false,
		".tmp-" + id: false, ".tmp-" + id[1:] + "-1-": false, id + ".json": false, ".tmp-" + id + "x1": false,
	} {
		assert.Equal(t, want, isTempFile(name), name)
	}
}
