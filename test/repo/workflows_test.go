package repo

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	usesLine   = regexp.MustCompile(`^\s*(?:-\s+)?uses:\s*(\S+)`)
	pinnedUses = regexp.MustCompile(`^[\w.-]+/[\w./-]+@[0-9a-f]{40}$`)
)

// workflowProblems is what the house rule refuses in a workflow: an action
// not pinned by commit (a tag can be moved to other code), a secret read,
// or a token that may write (permissions other than read at the top).
func workflowProblems(name, text string) []string {
	var out []string
	for i, line := range strings.Split(text, "\n") {
		if m := usesLine.FindStringSubmatch(line); m != nil && !pinnedUses.MatchString(m[1]) {
			out = append(out, fmt.Sprintf("%s:%d: %s is not pinned by commit", name, i+1, m[1]))
		}
		if strings.Contains(line, "secrets.") {
			out = append(out, fmt.Sprintf("%s:%d: reads a secret", name, i+1))
		}
	}
	if !regexp.MustCompile(`(?m)^permissions:\n  contents: read\n`).MatchString(text) {
		out = append(out, name+": the workflow's permissions are not contents: read alone")
	}
	return out
}

// TestWorkflowsPinned: every GitHub Actions workflow pins its actions by
// commit, reads no secret and starts with a read-only token (a job that
// needs more, the release's signing, says so itself); the unit workflow
// runs on Linux, macOS and Windows. A planted workflow with each fault is
// refused.
func TestWorkflowsPinned(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(docRoot, ".github/workflows/*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		assert.Empty(t, workflowProblems(filepath.Base(f), string(b)))
	}
	b, err := os.ReadFile(filepath.Join(docRoot, ".github/workflows/test.yaml"))
	require.NoError(t, err)
	for _, os := range []string{"ubuntu-", "macos-", "windows-"} {
		assert.Contains(t, string(b), os, "the unit tests run on every platform shipped")
	}
	plant := "name: x\npermissions: write-all\njobs:\n  a:\n    steps:\n      - uses: actions/checkout@v4\n" +
		"      - run: echo ${{ secrets.TOKEN }}\n"
	assert.Equal(t, []string{"plant:6: actions/checkout@v4 is not pinned by commit", "plant:7: reads a secret",
		"plant: the workflow's permissions are not contents: read alone"}, workflowProblems("plant", plant))
}
