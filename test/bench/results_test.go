// Package bench holds the benchmark's peers (hello, idp) and its last
// results, which README.md shows.
package bench

import (
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestREADMESpeedTable: README's speed figures are the table make bench
// wrote last (test/bench/results.md), word for word.
func TestREADMESpeedTable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	results, err := os.ReadFile("results.md")
	require.NoError(t, err, "run make bench")
	m := regexp.MustCompile(`(?s)<!-- bench:begin -->\n(.*?)<!-- bench:end -->`).FindSubmatch(readme)
	require.NotNil(t, m, "README.md has the bench markers")
	assert.Equal(t, string(results), string(m[1]), "README's speed table is make bench's last table: run make bench")
	assert.Contains(t, string(results), "| get-token (keyring) |")
}
