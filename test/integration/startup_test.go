package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// initCost is one package's initialisation as GODEBUG=inittrace=1 prints
// it: "init PKG @T ms, C ms clock, B bytes, N allocs".
type initCost struct {
	pkg   string
	bytes int
}

func parseInitTrace(stderr string) []initCost {
	var out []initCost
	for _, line := range strings.Split(stderr, "\n") {
		f := strings.Fields(line)
		if len(f) < 11 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		b, err := strconv.Atoi(f[7])
		if err != nil {
			continue
		}
		out = append(out, initCost{pkg: f[1], bytes: b})
	}
	return out
}

// startBudget is what a binary may initialise before main, in bytes
// allocated: the module's own packages each, the whole binary, and the
// packages whose initialisers the code was written to avoid.
type startBudget struct {
	ownEach, total int
	never          []string
}

// overBudget lists what a trace spends beyond b.
func overBudget(trace []initCost, b startBudget) []string {
	var out []string
	total := 0
	for _, c := range trace {
		total += c.bytes
		if strings.HasPrefix(c.pkg, "github.com/kubectl-impersonate/kubectl-impersonate/") && c.bytes > b.ownEach {
			out = append(out, c.pkg+": "+strconv.Itoa(c.bytes)+" bytes at start, over "+strconv.Itoa(b.ownEach))
		}
		for _, n := range b.never {
			if c.pkg == n || strings.HasPrefix(c.pkg, n+"/") {
				out = append(out, c.pkg+" initialises at start")
			}
		}
	}
	if total > b.total {
		out = append(out, "the start allocates "+strconv.Itoa(total)+" bytes, over "+strconv.Itoa(b.total))
	}
	return out
}

// TestNothingHeavyAtStart: the start-up costs given as the reason for
// hand-written code stay paid, as GODEBUG=inittrace=1 reports them.
//   - The module's packages each allocate at most 8 KiB before main (a
//     regular expression with a {0,251} repetition cost kubeapi 181 KB and
//     0.4 ms at every start, found by this test).
//   - The full binary initialises no encoding/xml (the graph's SVG escapes
//     XML itself: 19 KB), no go-graphviz (its WebAssembly: over a second),
//     no cli-runtime genericclioptions nor client-go's typed clients.
//   - The cached get-token binary initialises nothing of k8s.io.
//
// A planted trace over each bound is refused.
func TestNothingHeavyAtStart(t *testing.T) {
	alone := t.TempDir() // the fast binary without the full one: it starts, fails, hands nothing off
	b, err := os.ReadFile(fastBinary)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(alone, "kubectl-impersonate-get_token"), b, 0o700))
	for _, tt := range []struct {
		name   string
		path   string
		args   []string
		budget startBudget
	}{
		{"kubectl-impersonate", binary, []string{"version"}, startBudget{ownEach: 8 << 10, total: 640 << 10,
			never: []string{"encoding/xml", "github.com/goccy/go-graphviz", "k8s.io/cli-runtime/pkg/genericclioptions",
				"k8s.io/client-go/kubernetes"}}},
		{"kubectl-impersonate-get_token", filepath.Join(alone, "kubectl-impersonate-get_token"), []string{"get-token"},
			startBudget{ownEach: 8 << 10, total: 96 << 10, never: []string{"k8s.io", "encoding/xml"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(tt.path, tt.args...)
			cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
			out, _ := cmd.CombinedOutput() // the fast binary alone exits non-zero
			trace := parseInitTrace(string(out))
			require.Greater(t, len(trace), 20, "the trace was read:\n%s", out)
			assert.Empty(t, overBudget(trace, tt.budget))
			total := 0
			for _, c := range trace {
				total += c.bytes
			}
			t.Logf("%s: %d packages initialised, %d bytes", tt.name, len(trace), total)
		})
	}
	plant := "init regexp @1.0 ms, 0.01 ms clock, 0 bytes, 0 allocs\n" +
		"init github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/kubeapi @2.0 ms, 0.44 ms clock, 181576 bytes, 2000 allocs\n" +
		"init encoding/xml @3.0 ms, 0.03 ms clock, 19000 bytes, 50 allocs\n"
	assert.Equal(t, []string{
		"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/kubeapi: 181576 bytes at start, over 8192",
		"encoding/xml initialises at start", "the start allocates 200576 bytes, over 100000",
	}, overBudget(parseInitTrace(plant), startBudget{ownEach: 8 << 10, total: 100000, never: []string{"encoding/xml"}}))
}
