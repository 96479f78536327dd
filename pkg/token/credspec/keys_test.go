package credspec

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIsLoopbackHost(t *testing.T) {
	for h, want := range map[string]bool{
		"127.0.0.1": true, "127.1.2.3": true, "::1": true, "[::1]": true, "localhost": true, "LOCALHOST": true,
		"127.evil.example.com": false, "127.0.0.1.nip.io": false, "localhost.evil.example.com": false,
		"10.0.0.1": false, "0.0.0.0": false, "::": false, "": false, "example.com": false,
	} {
		assert.Equal(t, want, IsLoopbackHost(h), h)
	}
}
