package rbac

import "sync"

// ReviewBudget is --max-reviews shared by the matrices of a run (access
// -A): each reserves the access reviews it may need before sending any,
// and what it sent besides (its rules reviews; less what it reserved and
// did not send) is counted when it ends.
type ReviewBudget struct {
	mu        sync.Mutex
	max, used int
}

// NewReviewBudget is a budget of max requests (0: no limit).
func NewReviewBudget(max int) *ReviewBudget { return &ReviewBudget{max: max} }

// Reserve takes n from the budget, or says what is left (ok false: it
// took nothing).
func (b *ReviewBudget) Reserve(n int) (int, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.max != 0 && b.used+n > b.max {
		return max(b.max-b.used, 0), false
	}
	b.used += n
	return max(b.max-b.used, 0), true
}

// Spent counts the requests a matrix sent besides its reservation.
func (b *ReviewBudget) Spent(n int) {
	b.mu.Lock()
	b.used += n
	b.mu.Unlock()
}
