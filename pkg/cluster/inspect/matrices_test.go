package inspect

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbac"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/resource"
)

// matrixClient answers Access with a matrix of rows × verbs (every cell
// allowed) after a random delay, so that matrices end out of order; it
// counts those built.
type matrixClient struct {
	AccessClient // only Access is called
	rows         int
	failIn       string
	maxDelay     time.Duration
	built        atomic.Int64
}

func (c *matrixClient) Access(ctx context.Context, resources []resource.Resource, o rbac.AccessOptions) (*rbac.Matrix, error) {
	if o.Namespace == c.failIn {
		return nil, fmt.Errorf("reviewing the rules in %s: forbidden", o.Namespace)
	}
	if c.maxDelay > 0 {
		select {
		case <-time.After(rand.N(c.maxDelay)):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if o.Budget != nil {
		if left, ok := o.Budget.Reserve(1); !ok {
			return nil, fmt.Errorf("%w: %d left", rbac.ErrTooManyReviews, left)
		}
	}
	m := &rbac.Matrix{Namespace: o.Namespace, Verbs: o.Verbs, Requests: 2}
	for i := range c.rows {
		row := rbac.Row{Resource: fmt.Sprintf("r%d", i), Cells: map[string]rbac.Cell{}}
		for _, v := range o.Verbs {
			row.Cells[v] = rbac.Cell{Allowed: true}
		}
		m.Rows = append(m.Rows, row)
	}
	c.built.Add(1)
	return m, nil
}

func namespaces(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("ns-%04d", i)
	}
	return out
}

// TestMatricesInOrder: each matrix is handed on in the namespaces' order,
// whatever order they end in, and no more than Window wait at once.
func TestMatricesInOrder(t *testing.T) {
	c := &matrixClient{rows: 2, maxDelay: 3 * time.Millisecond}
	ns := namespaces(300)
	var got []string
	var mu sync.Mutex
	inFlight := 0
	err := Matrices(context.Background(), MatrixRequest{Client: c, Namespaces: ns, Verbs: []string{"get"}}, func(i int, m *rbac.Matrix) {
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, ns[i], m.Namespace)
		got = append(got, m.Namespace)
		inFlight = max(inFlight, int(c.built.Load())-len(got))
	})
	require.NoError(t, err)
	assert.Equal(t, ns, got)
	assert.LessOrEqual(t, inFlight, Window, "built and not handed on")
}

// TestMatricesAreNotKept: a caller that folds each matrix holds a few
// namespaces' at a time: with 400 namespaces of 500 resources × 8 verbs
// (1.6 million cells), the live heap stays under what a tenth of the
// matrices take, where keeping them all takes ten times as much.
func TestMatricesAreNotKept(t *testing.T) {
	peak := func(keep bool) (uint64, int) {
		c := &matrixClient{rows: 500}
		var kept []*rbac.Matrix
		var top uint64
		held := 0
		runtime.GC()
		err := Matrices(context.Background(), MatrixRequest{Client: c, Namespaces: namespaces(400), Verbs: rbac.DefaultVerbs}, func(i int, m *rbac.Matrix) {
			held += len(m.Rows)
			if keep {
				kept = append(kept, m)
			}
			if i%20 == 19 {
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				top = max(top, ms.HeapAlloc)
			}
		})
		require.NoError(t, err)
		runtime.KeepAlive(kept)
		return top, held
	}
	folded, held := peak(false)
	require.Equal(t, 400*500, held)
	all, _ := peak(true)
	t.Logf("peak live heap: folded %d MiB, kept %d MiB", folded>>20, all>>20)
	assert.Less(t, folded, all/5, "folding keeps a few matrices, not all")
}

func TestMatricesFailures(t *testing.T) {
	t.Run("a namespace fails: its error, once, and no more matrices", func(t *testing.T) {
		c := &matrixClient{rows: 1, failIn: "ns-0100"}
		emitted := 0
		err := Matrices(context.Background(), MatrixRequest{Client: c, Namespaces: namespaces(400), Verbs: []string{"get"}}, func(int, *rbac.Matrix) { emitted++ })
		require.EqualError(t, err, "reviewing the rules in ns-0100: forbidden")
		assert.LessOrEqual(t, emitted, 100, "at most those before it (the others stop with it)")
		assert.Less(t, c.built.Load(), int64(100+Window+NamespaceConcurrency+1), "no namespace far past it is asked")
	})
	t.Run("interrupted: the context's error", func(t *testing.T) {
		c := &matrixClient{rows: 1, maxDelay: 5 * time.Millisecond}
		ctx, cancel := context.WithCancel(context.Background())
		emitted := 0
		err := Matrices(ctx, MatrixRequest{Client: c, Namespaces: namespaces(1000), Verbs: []string{"get"}}, func(int, *rbac.Matrix) {
			if emitted++; emitted == 50 {
				cancel()
			}
		})
		require.ErrorIs(t, err, context.Canceled)
		assert.Less(t, emitted, 1000)
	})
	t.Run("--max-reviews: refused with the fix", func(t *testing.T) {
		c := &matrixClient{rows: 1}
		err := Matrices(context.Background(), MatrixRequest{Client: c, Namespaces: namespaces(10), Verbs: []string{"get"}, MaxReviews: 5}, func(int, *rbac.Matrix) {})
		require.True(t, errors.Is(err, rbac.ErrTooManyReviews), "%v", err)
		assert.ErrorContains(t, err, "raise --max-reviews")
	})
}
