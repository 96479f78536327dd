package tokencache

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	dbus "github.com/godbus/dbus/v5"
	gokeyring "github.com/zalando/go-keyring"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/environ"
)

// Freedesktop Secret Service names (https://specifications.freedesktop.org/secret-service/).
const (
	ssBusName          = "org.freedesktop.secrets"
	ssPath             = "/org/freedesktop/secrets"
	ssInterface        = "org.freedesktop.Secret.Service"
	ssItemInterface    = "org.freedesktop.Secret.Item"
	ssSessionInterface = "org.freedesktop.Secret.Session"
	// go-keyring creates its items in the "login" collection.
	ssLoginCollection = "/org/freedesktop/secrets/collection/login/"
)

// errItemLocked means the item exists but its collection is locked: only
// go-keyring's full path (which asks the keyring to unlock) can read it.
var errItemLocked = errors.New("keyring item is locked")

// secretService is this process's one connection to the Secret Service and
// its one plain session, opened by the first read and reused by every
// later read (a chunked entry reads several items); CloseKeyring closes
// both.
type secretService struct {
	mu      sync.Mutex
	conn    *dbus.Conn
	session dbus.ObjectPath
}

var sharedSecretService secretService

// open connects, with as few round trips as the protocol allows: after the
// connection's handshake, Hello, SearchItems and OpenSession are sent
// together (the bus handles messages in order, so the calls may follow
// Hello without waiting for its reply). It returns the search's answer.
func (s *secretService) open(attrs map[string]string) (unlocked, locked []dbus.ObjectPath, err error) {
	conn, err := dialSessionBus()
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) ([]dbus.ObjectPath, []dbus.ObjectPath, error) {
		_ = conn.Close()
		return nil, nil, err
	}
	hello := conn.BusObject().Go("org.freedesktop.DBus.Hello", 0, nil)
	svc := conn.Object(ssBusName, ssPath)
	search := svc.Go(ssInterface+".SearchItems", 0, nil, attrs)
	open := svc.Go(ssInterface+".OpenSession", 0, nil, "plain", dbus.MakeVariant(""))
	var uniqueName string
	if err := (<-hello.Done).Store(&uniqueName); err != nil {
		return fail(fmt.Errorf("registering on the D-Bus session bus: %w", err))
	}
	searchErr := (<-search.Done).Store(&unlocked, &locked)
	var ignored dbus.Variant
	var session dbus.ObjectPath
	openErr := (<-open.Done).Store(&ignored, &session)
	if openErr != nil {
		return fail(fmt.Errorf("opening a keyring session: %w", openErr))
	}
	s.conn, s.session = conn, session
	if searchErr != nil {
		return nil, nil, fmt.Errorf("searching the keyring: %w", searchErr)
	}
	return unlocked, locked, nil
}

// dialSessionBus connects and authenticates to the session bus. On a unix
// socket the SASL handshake is pipelined (pipelinedAuth); other addresses
// go through godbus's own dial and handshake.
func dialSessionBus() (*dbus.Conn, error) {
	address := environ.Getenv("DBUS_SESSION_BUS_ADDRESS")
	if address == "" {
		if dir := environ.Getenv("XDG_RUNTIME_DIR"); dir != "" {
			address = "unix:path=" + filepath.Join(dir, "bus")
		}
	}
	if network, sockAddr, ok := unixSocket(address); ok {
		c, err := net.DialTimeout(network, sockAddr, DefaultKeyringTimeout)
		if err != nil {
			return nil, fmt.Errorf("connecting to the D-Bus session bus: %w", err)
		}
		uid := strconv.Itoa(os.Geteuid())
		conn, err := dbus.NewConn(&pipelinedAuth{Conn: c, uid: uid, in: bufio.NewReader(c)})
		if err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("connecting to the D-Bus session bus: %w", err)
		}
		if err := conn.Auth([]dbus.Auth{dbus.AuthExternal(uid)}); err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("authenticating to the D-Bus session bus: %w", err)
		}
		return conn, nil
	}
	conn, err := dbus.SessionBusPrivate()
	if err != nil {
		return nil, fmt.Errorf("connecting to the D-Bus session bus: %w", err)
	}
	if err := conn.Auth(nil); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("authenticating to the D-Bus session bus: %w", err)
	}
	return conn, nil
}

// unixSocket reads the first address of a D-Bus address list
// (https://dbus.freedesktop.org/doc/dbus-specification.html#addresses)
// when it is a unix path or abstract socket.
func unixSocket(address string) (network, addr string, ok bool) {
	first, _, _ := strings.Cut(address, ";")
	rest, ok := strings.CutPrefix(first, "unix:")
	if !ok {
		return "", "", false
	}
	for _, kv := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(kv, "=")
		v, err := url.PathUnescape(v)
		if err != nil {
			return "", "", false
		}
		switch k {
		case "path":
			return "unix", v, v != ""
		case "abstract":
			return "unix", "@" + v, v != ""
		}
	}
	return "", "", false
}

// pipelinedAuth is the socket under godbus during and after its SASL
// handshake. godbus waits for an answer to each of its five handshake
// lines; instead this answers them itself and sends the bus, in one write
// with godbus's BEGIN, "AUTH EXTERNAL <uid>" (as sd-bus does): the
// handshake then costs no round trip of its own, and the bus's answer is
// read with the replies to the first calls. That answer must be OK, or
// the first read fails (and the caller falls back to go-keyring).
type pipelinedAuth struct {
	net.Conn
	uid    string
	in     *bufio.Reader
	fake   bytes.Buffer // answers to godbus's handshake lines
	begun  bool         // BEGIN sent: from now on the socket is the bus's
	okRead bool
}

func (p *pipelinedAuth) Write(b []byte) (int, error) {
	if p.begun {
		return p.Conn.Write(b)
	}
	switch line := string(b); {
	case line == "\x00":
		// The credentials byte goes with the real handshake.
	case line == "AUTH\r\n":
		p.fake.WriteString("REJECTED EXTERNAL\r\n")
	case line == "AUTH EXTERNAL\r\n":
		p.fake.WriteString("OK 00000000000000000000000000000000\r\n")
	case line == "BEGIN\r\n":
		p.begun = true
		if _, err := p.Conn.Write([]byte("\x00AUTH EXTERNAL " + hex.EncodeToString([]byte(p.uid)) +
			"\r\nBEGIN\r\n")); err != nil {
			return 0, err
		}
	default:
		return 0, fmt.Errorf("dbus: unexpected handshake line %q", strings.TrimSpace(line))
	}
	return len(b), nil
}

func (p *pipelinedAuth) Read(b []byte) (int, error) {
	if !p.begun {
		return p.fake.Read(b)
	}
	if !p.okRead {
		// The answer is "OK <32 hex digits>\r\n": at most 64 bytes are read
		// before it must have ended.
		var line []byte
		for len(line) < 64 && (len(line) == 0 || line[len(line)-1] != '\n') {
			c, err := p.in.ReadByte()
			if err != nil {
				return 0, err
			}
			line = append(line, c)
		}
		if !bytes.HasPrefix(line, []byte("OK ")) || line[len(line)-1] != '\n' {
			return 0,
				fmt.Errorf("dbus: the session bus refused EXTERNAL authentication: %q", strings.TrimSpace(string(line)))
		}
		p.okRead = true
	}
	return p.in.Read(b)
}

// get reads the item go-keyring stored for (service, user): on the first
// call the connection's handshake and three pipelined calls, then two
// round trips (SearchItems, GetSecret) per item. go-keyring's Get makes a
// new connection and six sequential calls (unlocking the collection and the
// item, opening and closing a session) per item, and at about 0.5 ms a
// round trip that is the larger part of a cached get-token. Writes, deletes
// and locked items still go through go-keyring.
func (s *secretService) get(service, user string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	attrs := map[string]string{"username": user, "service": service}
	var unlocked, locked []dbus.ObjectPath
	var err error
	if s.conn == nil {
		unlocked, locked, err = s.open(attrs)
	} else {
		err = s.conn.Object(ssBusName, ssPath).Call(ssInterface+".SearchItems", 0, attrs).Store(&unlocked, &locked)
		if err != nil {
			s.drop() // the next read connects again
			err = fmt.Errorf("searching the keyring: %w", err)
		}
	}
	if err != nil {
		return "", err
	}
	item, ok := pickItem(unlocked)
	if !ok {
		if len(locked) > 0 {
			return "", errItemLocked
		}
		return "", gokeyring.ErrNotFound
	}
	var secret struct {
		Session     dbus.ObjectPath
		Parameters  []byte
		Value       []byte
		ContentType string `dbus:"content_type"`
	}
	if err := s.conn.Object(ssBusName, item).Call(ssItemInterface+".GetSecret", 0,
		s.session).Store(&secret); err != nil {
		s.drop()
		return "", fmt.Errorf("reading the keyring item: %w", err)
	}
	return string(secret.Value), nil
}

// close ends the session and the connection. A read still waiting for a
// keyring that does not answer holds the lock: then the process's exit
// closes them.
func (s *secretService) close() {
	if !s.mu.TryLock() {
		return
	}
	defer s.mu.Unlock()
	if s.conn != nil {
		// No reply awaited: the call is written before the connection closes.
		_ = s.conn.Object(ssBusName, s.session).Go(ssSessionInterface+".Close", dbus.FlagNoReplyExpected, nil).Err
	}
	s.drop()
}

// drop closes the connection (the bus then ends its sessions); the lock is
// held.
func (s *secretService) drop() {
	if s.conn != nil {
		_ = s.conn.Close()
	}
	s.conn, s.session = nil, ""
}

// CloseKeyring closes this process's Secret Service connection, if a read
// opened one.
func CloseKeyring() { sharedSecretService.close() }

// pickItem prefers go-keyring's own collection, as its Get does.
func pickItem(items []dbus.ObjectPath) (dbus.ObjectPath, bool) {
	for _, p := range items {
		if strings.HasPrefix(string(p), ssLoginCollection) {
			return p, true
		}
	}
	if len(items) > 0 {
		return items[0], true
	}
	return "", false
}

// fastGetter is set on Linux, where the Secret Service is read directly.
var fastGetter = func(api KeyringAPI) func(service, user string) (string, error) {
	if _, ok := api.(goKeyring); !ok {
		return nil
	}
	return func(service, user string) (string, error) {
		v, err := sharedSecretService.get(service, user)
		if err == nil || errors.Is(err, gokeyring.ErrNotFound) {
			return v, err
		}
		// Locked items, and a Secret Service that answered the pipelined
		// calls unexpectedly (seen once in 200 crash-test kills:
		// gnome-keyring answering SearchItems "not implemented"): go-keyring's
		// own sequential path decides.
		return api.Get(service, user)
	}
}
