package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docs/reference matches the command tree: regenerate with "make docs".
func TestReferenceIsCurrent(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, generate(dir))
	want, err := filepath.Glob(filepath.Join(dir, "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, want)
	have, _ := filepath.Glob("../../docs/reference/*.md")
	assert.Len(t, have, len(want), "docs/reference has other pages than the command tree: run make docs")
	for _, w := range want {
		name := filepath.Base(w)
		wb, _ := os.ReadFile(w)
		hb, err := os.ReadFile(filepath.Join("../../docs/reference", name))
		if !assert.NoError(t, err, "docs/reference/%s is missing: run make docs", name) {
			continue
		}
		assert.Equal(t, string(wb), string(hb), "docs/reference/%s is stale: run make docs", name)
	}
}
