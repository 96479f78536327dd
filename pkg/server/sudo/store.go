package sudo

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation"
)

// Store is one proxy replica's view of grants and requests, fed by watches
// (Watch): what Elevate decides by.
//
//   - Current: both watches listed once and are open, or closed for less
//     than Grace (a watch ends every few minutes and reopens at once).
//   - A grant counts when elevation.Check says so at the proxy's clock.
type Store struct {
	// Grace is how long a closed watch still counts as current (DefaultGrace
	// when 0).
	Grace time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu       sync.RWMutex
	grants   map[string]elevation.Grant // "namespace/name"
	requests map[string]elevation.Request
	// revoked holds a channel per grant a stream was opened under, closed
	// when the grant stops counting early.
	revoked map[string]chan struct{}
	feeds   [2]feed
}

// DefaultGrace is Store.Grace's default.
const DefaultGrace = time.Second

// feed is one watch's state.
type feed struct {
	synced bool
	open   bool
	// gen counts the watches opened: a report of an older one's end is
	// ignored.
	gen uint64
	// closedAt is when it last closed (zero while open).
	closedAt time.Time
	// err is why it last closed, for the operator.
	err string
}

const (
	grantFeed = iota
	requestFeed
)

// NewStore returns an empty Store, current once both watches list.
func NewStore() *Store {
	return &Store{grants: map[string]elevation.Grant{}, requests: map[string]elevation.Request{},
		revoked: map[string]chan struct{}{}}
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// current says why the view is not current, "" when it is.
func (s *Store) current(now time.Time) string {
	grace := s.Grace
	if grace == 0 {
		grace = DefaultGrace
	}
	for i, f := range s.feeds {
		what := [...]string{"sudogrants", "sudorequests"}[i]
		switch {
		case !f.synced:
			return "the watch of " + what + " has not listed yet" + suffix(f.err)
		case !f.open && now.Sub(f.closedAt) >= grace:
			return "the watch of " + what + " closed " + now.Sub(f.closedAt).Round(time.Second).String() +
				" ago" + suffix(f.err)
		}
	}
	return ""
}

func suffix(err string) string {
	if err == "" {
		return ""
	}
	return ": " + err
}

// Current says whether the view is current, and why not.
func (s *Store) Current() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if why := s.current(s.now()); why != "" {
		return fmt.Errorf("%w: %s", ErrNotCurrent, why)
	}
	return nil
}

// Elevate is caller's request under the grant name in ns: ErrRefused
// (403) with what is wrong, ErrNotCurrent (503) when the view is not
// current.
func (s *Store) Elevate(caller user.Info, ns, name string) (*Elevation, error) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.check(caller, ns, name, now)
	if err != nil {
		return nil, err
	}
	ref := elevation.Ref(ns, name)
	ch, ok := s.revoked[ref]
	if !ok {
		ch = make(chan struct{})
		s.revoked[ref] = ch
	}
	return &Elevation{Namespace: ns, Name: name, Ends: g.Ends(), Revoked: ch,
		As: elevated(caller, ns, name, g.Spec.Role, elevation.CleanText(g.Spec.Reason),
			elevation.CleanText(g.Spec.Ticket))}, nil
}

// check is the grant name in ns when it is caller's and counts at now:
// ErrRefused with what is wrong, ErrNotCurrent when the view is not
// current. Holds mu (read or write).
func (s *Store) check(caller user.Info, ns, name string, now time.Time) (elevation.Grant, error) {
	if why := s.current(now); why != "" {
		return elevation.Grant{}, fmt.Errorf("%w: %s", ErrNotCurrent, why)
	}
	g, ok := s.grants[elevation.Ref(ns, name)]
	if !ok {
		return g, fmt.Errorf("%w: there is no sudo grant %s in %s", ErrRefused, name, ns)
	}
	if g.Spec.Requester != caller.GetName() {
		return g, fmt.Errorf("%w: grant %s is %s's, not yours", ErrRefused, g.Ref(), g.Spec.Requester)
	}
	if ok, why := elevation.Check(g, s.requestOf(g), now); !ok {
		if strings.HasPrefix(why, "expired ") || strings.HasPrefix(why, "revoked ") {
			return g, fmt.Errorf("%w: grant %s %s", ErrRefused, g.Ref(), why)
		}
		return g, fmt.Errorf("%w: grant %s does not count: %s", ErrRefused, g.Ref(), why)
	}
	return g, nil
}

// requestOf is g's request in the view, nil when there is none. Holds mu
// (read or write).
func (s *Store) requestOf(g elevation.Grant) *elevation.Request {
	r, ok := s.requests[elevation.Ref(g.Namespace, g.Spec.Request)]
	if !ok {
		return nil
	}
	return &r
}

// Len is how many grants and requests the view holds.
func (s *Store) Len() (grants, requests int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.grants), len(s.requests)
}

// setGrant records g (nil: deleted) and ends the streams of a grant that
// stops counting.
func (s *Store) setGrant(k string, g *elevation.Grant) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g == nil {
		delete(s.grants, k)
	} else {
		s.grants[k] = *g
	}
	s.recheck(k)
}

// setRequest records r (nil: deleted), and rechecks its grant (named as
// it).
func (s *Store) setRequest(k string, r *elevation.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r == nil {
		delete(s.requests, k)
	} else {
		s.requests[k] = *r
	}
	s.recheck(k)
}

// replaceGrants and replaceRequests set every grant or request at once (a
// list), rechecking each grant streams were opened under.
func (s *Store) replaceGrants(gs map[string]elevation.Grant) { s.replace(func() { s.grants = gs }) }

func (s *Store) replaceRequests(rs map[string]elevation.Request) {
	s.replace(func() { s.requests = rs })
}

func (s *Store) replace(set func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	set()
	for k := range s.revoked {
		s.recheck(k)
	}
}

// recheck closes the revocation channel of the grant k once it no longer
// counts (streams also end at Ends by their own deadline). Holds mu.
func (s *Store) recheck(k string) {
	ch, ok := s.revoked[k]
	if !ok {
		return
	}
	counts := false
	if g, ok := s.grants[k]; ok {
		counts, _ = elevation.Check(g, s.requestOf(g), s.now())
	}
	if !counts {
		close(ch)
		delete(s.revoked, k)
	}
}

// listing marks feed i as listing (a list, or a watch that sends its
// initial events): not synced until its Replace, since what it replaces
// may hide a revocation the closed watch missed.
func (s *Store) listing(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.feeds[i].synced = false
}

// synced marks feed i's list done (Replace).
func (s *Store) synced(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.feeds[i].synced = true
}

// opened marks a watch of feed i open, and returns its generation.
func (s *Store) opened(i int) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := &s.feeds[i]
	f.gen++
	f.open, f.closedAt, f.err = true, time.Time{}, ""
	return f.gen
}

// closed marks the watch gen of feed i closed, unless a newer one opened
// since (a late report of an older watch); err says why, "" for a watch
// that ended as watches do.
func (s *Store) closed(i int, gen uint64, err string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := &s.feeds[i]
	if gen != f.gen {
		return
	}
	if f.open {
		f.open, f.closedAt = false, s.now()
	}
	if err != "" {
		f.err = err
	}
}

// failed records why feed i could not list or watch: it stays closed.
func (s *Store) failed(i int, err string) {
	s.mu.Lock()
	f := &s.feeds[i]
	gen := f.gen
	s.mu.Unlock()
	s.closed(i, gen, err)
}

// Sweep ends the streams of grants that no longer count: all of them
// while the view is not current (a revocation may be unseen), and those
// past their end (their streams ended by their own deadline). Watch runs
// it every SweepInterval.
func (s *Store) Sweep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	stale := s.current(s.now()) != ""
	for k, ch := range s.revoked {
		if stale {
			close(ch)
			delete(s.revoked, k)
			continue
		}
		s.recheck(k)
	}
}

// SweepInterval is how often Watch runs Sweep.
const SweepInterval = 250 * time.Millisecond

// Load sets the whole view at once, current as if both watches had listed
// and stayed open: for a proxy fed otherwise, benchmarks and tests.
func (s *Store) Load(grants []elevation.Grant, requests []elevation.Request) {
	gs, rs := map[string]elevation.Grant{}, map[string]elevation.Request{}
	for _, g := range grants {
		gs[elevation.Ref(g.Namespace, g.Name)] = g
	}
	for _, r := range requests {
		rs[elevation.Ref(r.Namespace, r.Name)] = r
	}
	s.replaceGrants(gs)
	s.replaceRequests(rs)
	for i := range s.feeds {
		s.synced(i)
		s.opened(i)
	}
}

// Close marks both watches closed now (a test's outage).
func (s *Store) Close(why string) {
	for i := range s.feeds {
		s.failed(i, why)
	}
}

// Live are the grants that count at the Store's clock.
func (s *Store) Live() []elevation.Grant {
	now := s.now()
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []elevation.Grant
	for _, g := range s.grants {
		if ok, _ := elevation.Check(g, s.requestOf(g), now); ok {
			out = append(out, g)
		}
	}
	return out
}
