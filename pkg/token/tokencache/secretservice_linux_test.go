package tokencache

import (
	"bufio"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUnixSocket(t *testing.T) {
	for _, tt := range []struct {
		address, network, addr string
		ok                     bool
	}{
		{"unix:path=/run/user/1000/bus", "unix", "/run/user/1000/bus", true},
		{"unix:path=/tmp/dbus-x,guid=0123", "unix", "/tmp/dbus-x", true},
		{"unix:guid=0123,abstract=/tmp/dbus-y", "unix", "@/tmp/dbus-y", true},
		{"unix:path=/tmp/a%20b", "unix", "/tmp/a b", true},
		{"unix:path=/first;tcp:host=localhost,port=1", "unix", "/first", true},
		{"tcp:host=127.0.0.1,port=1234", "", "", false},
		{"unix:tmpdir=/tmp", "", "", false},
		{"", "", "", false},
	} {
		t.Run(tt.address, func(t *testing.T) {
			network, addr, ok := unixSocket(tt.address)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.network, network)
			assert.Equal(t, tt.addr, addr)
		})
	}
}

// TestPipelinedAuth: godbus's five handshake lines become one write of
// "AUTH EXTERNAL <hex uid>" and BEGIN; the bus's OK is removed from what
// godbus reads next, and any other answer fails that read.
func TestPipelinedAuth(t *testing.T) {
	for _, tt := range []struct {
		name, answer string
		wantErr      string
	}{
		{"OK", "OK 1234abcd\r\nl-the-first-message", ""},
		{"rejected", "REJECTED EXTERNAL\r\n", "refused EXTERNAL authentication"},
		{"an endless line", strings.Repeat("O", 200), "refused EXTERNAL authentication"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			client, bus := net.Pipe()
			defer client.Close()
			p := &pipelinedAuth{Conn: client, uid: "1000", in: bufio.NewReader(client)}
			got := make(chan string, 1)
			go func() {
				b := make([]byte, 256)
				n, _ := bus.Read(b)
				got <- string(b[:n])
				_, _ = bus.Write([]byte(tt.answer))
				_ = bus.Close()
			}()
			in := bufio.NewReader(p)
			for _, step := range [][2]string{{"\x00", ""}, {"AUTH\r\n", "REJECTED EXTERNAL\r\n"}, {"AUTH EXTERNAL\r\n", "OK 00000000000000000000000000000000\r\n"}} {
				line, answer := step[0], step[1]
				_, err := p.Write([]byte(line))
				require.NoError(t, err)
				if answer != "" {
					l, err := in.ReadString('\n')
					require.NoError(t, err)
					assert.Equal(t, answer, l)
				}
			}
			_, err := p.Write([]byte("BEGIN\r\n"))
			require.NoError(t, err)
			assert.Equal(t, "\x00AUTH EXTERNAL 31303030\r\nBEGIN\r\n", <-got, "one write: credentials byte, EXTERNAL with the uid, BEGIN")
			b := make([]byte, 64)
			n, err := p.Read(b)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "l-the-first-message", string(b[:n]))
		})
	}
}
