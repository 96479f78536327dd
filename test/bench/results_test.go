// Package bench holds the benchmark's peers (hello, idp) and its last
// results, which docs/performance.md shows.
package bench

import (
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPerformanceSpeedTable: docs/performance.md's speed figures are the table make bench
// wrote last (test/bench/results.md), word for word.
func TestPerformanceSpeedTable(t *testing.T) {
	readme, err := os.ReadFile("../../docs/performance.md")
	require.NoError(t, err)
	results, err := os.ReadFile("results.md")
	require.NoError(t, err, "run make bench")
	m := regexp.MustCompile(`(?s)<!-- bench:begin -->\n(.*?)<!-- bench:end -->`).FindSubmatch(readme)
	require.NotNil(t, m, "docs/performance.md has the bench markers")
	assert.Equal(t, string(results), string(m[1]), "docs/performance.md's speed table is make bench's last table: run make bench")
	assert.Contains(t, string(results), "| get-token (keyring) |")
}
