package environ

import (
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHomeDir: the home directory read through getenv is the one
// os.UserHomeDir finds, on every platform we ship.
func TestHomeDir(t *testing.T) {
	env := map[string]string{"HOME": "/home/u", "USERPROFILE": `C:\Users\u`, "home": "/usr/u"}
	getenv := func(k string) string { return env[k] }
	none := func(string) string { return "" }
	for _, tc := range []struct {
		goos, want, err string
		getenv          func(string) string
	}{
		{"linux", "/home/u", "", getenv},
		{"darwin", "/home/u", "", getenv},
		{"windows", `C:\Users\u`, "", getenv},
		{"plan9", "/usr/u", "", getenv},
		{"linux", "", "$HOME is not defined", none},
		{"darwin", "", "$HOME is not defined", none},
		{"windows", "", "%userprofile% is not defined", none},
		{"ios", "/", "", none},
	} {
		got, err := homeDir(tc.getenv, tc.goos)
		if tc.err != "" {
			assert.EqualError(t, err, tc.err, tc.goos)
			continue
		}
		require.NoError(t, err, tc.goos)
		assert.Equal(t, tc.want, got, tc.goos)
	}
	want, err := os.UserHomeDir()
	require.NoError(t, err)
	got, err := HomeDir(Getenv)
	require.NoError(t, err)
	assert.Equal(t, want, got, "this process, on %s", runtime.GOOS)
}
