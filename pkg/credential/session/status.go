package session

import (
	"context"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/settings"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/credspec"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
)

// Status is what the cache says of one session (a row of status).
type Status struct {
	Context string `json:"context"`
	Current bool   `json:"current,omitempty"`
	Cluster string `json:"cluster"`
	Server  string `json:"server,omitempty"`
	// User is the kubeconfig user; Identity whom the cached token names.
	User     string `json:"user"`
	Identity string `json:"identity,omitempty"`
	Issuer   string `json:"issuer,omitempty"`
	ClientID string `json:"clientID,omitempty"`
	Exchange string `json:"exchange,omitempty"`
	// LoggedIn: a token is cached; Valid: get-token hands it out without
	// renewing it.
	LoggedIn     bool      `json:"loggedIn"`
	Valid        bool      `json:"valid"`
	Expiry       time.Time `json:"expiry,omitzero"`
	RefreshToken bool      `json:"refreshToken"`
	// Storage is where the token is cached (keyring, disk).
	Storage string `json:"storage,omitempty"`
	// AllowedServer is the --allowed-server check of this cluster:
	// "any" (no limit), "allowed", or why the token is refused.
	AllowedServer string `json:"allowedServer"`
	// SharedWith are the other contexts using the same cached token.
	SharedWith []string `json:"sharedWith,omitempty"`
	Error      string   `json:"error,omitempty"`
	Check      *Check   `json:"check,omitempty"`
}

// Refused says --allowed-server keeps the token from the cluster.
func (r *Status) Refused() bool { return r.AllowedServer != "any" && r.AllowedServer != "allowed" }

// Check is the cluster's SelfSubjectReview of the cached token.
type Check struct {
	Username string   `json:"username,omitempty"`
	Groups   []string `json:"groups,omitempty"`
	Error    string   `json:"error,omitempty"`
}

// StatusOptions say how Statuses reads and checks.
type StatusOptions struct {
	// Current is the kubeconfig's current context.
	Current string
	// Store opens a session's cache (its settings' store, or a fake).
	Store func(a *settings.AuthOptions) (tokencache.Store, error)
	// Checker, when set, asks a session's cluster who its valid cached
	// token is, each within Timeout, Parallel sessions at a time; it
	// reads the token through Gate.
	Checker  func(ctx context.Context, s *Session) (*Check, error)
	Parallel int
	Timeout  time.Duration
}

// Statuses reads the cache of each session (and with a Checker, asks its
// cluster), and names the sessions sharing a token.
func Statuses(ctx context.Context, sessions []*Session, o StatusOptions) []*Status {
	rows := make([]*Status, len(sessions))
	each(len(sessions), o.Parallel, func(i int) { rows[i] = status(ctx, sessions[i], o) })
	byIdentity := map[string][]string{}
	for _, s := range sessions {
		if id := s.Identity(); id != "" {
			byIdentity[id] = append(byIdentity[id], s.Context)
		}
	}
	for i, s := range sessions {
		for _, other := range byIdentity[s.Identity()] {
			if other != s.Context {
				rows[i].SharedWith = append(rows[i].SharedWith, other)
			}
		}
	}
	if o.Checker == nil {
		return rows
	}
	each(len(sessions), o.Parallel, func(i int) {
		if !rows[i].Valid || rows[i].Refused() {
			return
		}
		cctx, cancel := context.WithTimeout(ctx, o.Timeout)
		defer cancel()
		c, err := o.Checker(cctx, sessions[i])
		if err != nil {
			c = &Check{Error: logging.OneLine(err.Error(), 300)}
		}
		rows[i].Check = c
	})
	return rows
}

// each runs f(0..n-1), parallel at a time.
func each(n, parallel int, f func(i int)) {
	var g errgroup.Group
	g.SetLimit(max(parallel, 1))
	for i := range n {
		g.Go(func() error { f(i); return nil })
	}
	_ = g.Wait() // f returns no error
}

// status is one session's row from the cache.
func status(ctx context.Context, s *Session, o StatusOptions) *Status {
	r := &Status{Context: s.Context, Current: s.Context == o.Current, Cluster: s.Cluster, Server: s.Server(),
		User: s.User, AllowedServer: "any"}
	if s.Err != nil {
		r.Error = logging.OneLine(s.Err.Error(), 300)
		return r
	}
	a := s.Auth
	r.Issuer, r.ClientID, r.Exchange = a.IssuerURL, a.ClientID, a.Exchange
	if a.Exchange == credspec.ExchangeCloudSigma {
		r.Issuer = a.CloudSigma().Issuer()
	}
	if len(a.AllowedServers) > 0 {
		r.AllowedServer = "allowed"
		if err := a.CheckAllowedServer(s.ExecCluster()); err != nil {
			r.AllowedServer = logging.OneLine(err.Error(), 300)
		}
	}
	store, err := o.Store(a)
	if err != nil {
		r.Error = logging.OneLine(err.Error(), 300)
		return r
	}
	c, err := Read(ctx, a, store)
	if err != nil {
		r.Error = logging.OneLine(err.Error(), 300)
		return r
	}
	r.LoggedIn, r.RefreshToken, r.Identity = c.LoggedIn(), c.RefreshToken(), c.Subject()
	if c.Entry == nil {
		if c.Base != nil {
			r.Storage = c.Base.Storage
		}
		return r
	}
	r.Storage, r.Expiry, r.Valid = c.Storage, c.Expiry, c.Valid && c.Token != ""
	return r
}
