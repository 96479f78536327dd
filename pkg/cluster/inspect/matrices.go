package inspect

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbac"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbaceval"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/resource"
)

// MatrixRequest is access's question: what the identity of Client may do
// to Resources in each of Namespaces ("" is the cluster scope).
type MatrixRequest struct {
	Client AccessClient
	// Other, when set, is --diff-as's identity (OtherName): each matrix
	// is then the cells where the two differ.
	Other      AccessClient
	OtherName  string
	Resources  []resource.Resource
	Namespaces []string
	Verbs      []string
	// ForceSSAR asks every cell with an access review.
	ForceSSAR  bool
	Escalation bool
	// MaxReviews bounds the access reviews of all the matrices (0: none).
	MaxReviews int
	// Local and OtherLocal evaluate RBAC objects read once (LocalRules)
	// instead of a rules review per namespace.
	Local, OtherLocal rbaceval.LocalRules
	// ReviewProgress, when set, follows the access reviews of a matrix.
	ReviewProgress func(namespace string, done, total int)
}

// NamespaceConcurrency is how many namespaces' matrices are built at a
// time; Window how many may be built or wait to be handed on at once,
// which bounds what Matrices holds whatever the number of namespaces.
const (
	NamespaceConcurrency = 16
	Window               = 4 * NamespaceConcurrency
)

// Matrices builds one matrix per namespace: the first alone (it asks the
// cluster's escalation checks once for all), then the others
// NamespaceConcurrency at a time. emit receives each, in the order of
// q.Namespaces, as soon as it and those before it are done; Matrices keeps
// none of them once emitted, so that a caller that folds them (access
// -A's summary) or prints them (-o wide) holds one namespace's at a time.
func Matrices(ctx context.Context, q MatrixRequest, emit func(i int, m *rbac.Matrix)) error {
	if len(q.Namespaces) == 0 {
		return nil
	}
	b := &builder{q: q, budget: rbac.NewReviewBudget(q.MaxReviews)}
	first, err := b.matrix(ctx, q.Namespaces[0])
	if err != nil {
		return err
	}
	if q.Escalation && q.Other == nil {
		b.escalation = first.ClusterEscalation()
	}
	emit(0, first)
	pending := make(map[int]*rbac.Matrix)
	next := 1
	var mu sync.Mutex
	slots := make(chan struct{}, Window)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(NamespaceConcurrency)
	for i := 1; i < len(q.Namespaces); i++ {
		select {
		case slots <- struct{}{}: // released once emitted, in order
		case <-gctx.Done():
			if err := g.Wait(); err != nil {
				return err // the failure
			}
			return ctx.Err() // the interruption
		}
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err // interrupted, or another matrix failed
			}
			m, err := b.matrix(gctx, q.Namespaces[i])
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			pending[i] = m
			for pending[next] != nil {
				emit(next, pending[next])
				delete(pending, next)
				next++
				<-slots
			}
			return nil
		})
	}
	return g.Wait()
}

// builder builds the matrices of one request, with their shared review
// budget and the cluster's escalation checks asked once.
type builder struct {
	q      MatrixRequest
	budget *rbac.ReviewBudget
	// escalation and otherEscalation are the cluster's escalation checks
	// of each identity, from the first matrix.
	mu                          sync.Mutex
	escalation, otherEscalation []rbac.EscalationCell
}

// matrix is ns's matrix, or with --diff-as the cells where the two
// identities differ.
func (b *builder) matrix(ctx context.Context, ns string) (*rbac.Matrix, error) {
	q := b.q
	b.mu.Lock()
	escalation, otherEscalation := b.escalation, b.otherEscalation
	b.mu.Unlock()
	opts := rbac.AccessOptions{Namespace: ns, Verbs: q.Verbs, ForceSSAR: q.ForceSSAR,
		Escalation: q.Escalation, ClusterEscalation: escalation, LocalRules: q.Local,
		Budget: b.budget, Progress: q.ReviewProgress}
	m, err := q.Client.Access(ctx, q.Resources, opts)
	if errors.Is(err, rbac.ErrTooManyReviews) {
		return nil, fmt.Errorf("%w; raise --max-reviews (0: no limit), or ask about fewer namespaces or verbs (or "+
			"give --escalation=false)", err)
	}
	if err != nil {
		return nil, err
	}
	if q.Other == nil {
		return m, nil
	}
	opts.ClusterEscalation, opts.LocalRules = otherEscalation, q.OtherLocal
	m2, err := q.Other.Access(ctx, q.Resources, opts)
	if err != nil {
		return nil, fmt.Errorf("as %s: %w", q.OtherName, err)
	}
	if q.Escalation {
		b.mu.Lock()
		if b.otherEscalation == nil {
			b.otherEscalation = m2.ClusterEscalation()
		}
		if b.escalation == nil {
			b.escalation = m.ClusterEscalation()
		}
		b.mu.Unlock()
	}
	return diffMatrices(m, m2), nil
}
