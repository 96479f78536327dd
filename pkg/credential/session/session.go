// Package session reads, obtains, revokes and ends the sessions of a
// kubeconfig.
//
//   - A session is a context whose user's exec entry runs this plugin: its
//     settings (one parse of an exec entry, for the context's cluster), and
//     what the token cache holds for it, judged as get-token judges it.
//   - It holds the use cases of get-token, login, status and logout.
package session

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/runtime"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/settings"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/execcred"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/safefile"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/credspec"
)

// ErrNotOurs says a kubeconfig user does not run this plugin.
var ErrNotOurs = settings.ErrNotOurs

// Session is one kubeconfig context whose user runs this plugin: its
// names, its cluster entry, and the settings of its user's exec entry for
// that cluster (Err when they cannot be read).
type Session struct {
	Context, Cluster, User string
	ClusterEntry           *clientcmdapi.Cluster
	Exec                   *clientcmdapi.ExecConfig
	Auth                   *settings.AuthOptions
	Err                    error
	// unbound are the settings before the cluster's (ForCluster): Gate
	// binds a copy of them to the cluster a client targets.
	unbound *settings.AuthOptions
}

// Identity names the cached token the session's settings select: the
// cache key's ID. Sessions with the same identity share one token.
func (s *Session) Identity() string {
	if s.Auth == nil {
		return ""
	}
	return s.Auth.Key().ID()
}

// Server is the cluster entry's server, "" without one.
func (s *Session) Server() string {
	if s.ClusterEntry == nil {
		return ""
	}
	return s.ClusterEntry.Server
}

// List is the sessions of raw, sorted by context name; names, when given,
// selects those contexts (each must exist and run this plugin). user,
// when set, holds flags of the command line that replace the exec
// entries' values (login and logout).
func List(
	raw *clientcmdapi.Config, names []string, user *settings.AuthOptions, getenv func(string) string,
) ([]*Session, error) {
	for _, n := range names {
		if _, ok := raw.Contexts[n]; !ok {
			return nil, fmt.Errorf("the kubeconfig has no context %q (kubectl config get-contexts lists them)", n)
		}
	}
	var out []*Session
	for name, c := range raw.Contexts {
		if len(names) > 0 && !slices.Contains(names, name) {
			continue
		}
		s := newSession(raw, name, c.AuthInfo, c.Cluster, user, getenv)
		if errors.Is(s.Err, ErrNotOurs) {
			if len(names) > 0 {
				return nil, fmt.Errorf("context %q: %w", name, s.Err)
			}
			continue
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Context < out[j].Context })
	return out, nil
}

// Selection is kubectl's choice of a context, its user and its cluster
// (--context, --user, --cluster; empty: the kubeconfig's).
type Selection struct{ Context, User, Cluster string }

// Current is the session of the selected context (default: the current
// one), as kubectl would run its user's exec entry: an error when the
// context does not exist (unless --user names the user), when its user
// does not run this plugin (ErrNotOurs), or when the entry cannot be read.
func Current(
	raw *clientcmdapi.Config, sel Selection, user *settings.AuthOptions, getenv func(string) string,
) (*Session, error) {
	name := cmp.Or(sel.Context, raw.CurrentContext)
	c, found := raw.Contexts[name]
	if !found && sel.User == "" {
		return nil, fmt.Errorf("the kubeconfig has no context %q: give --context, or the issuer flags", name)
	}
	if c == nil {
		c = clientcmdapi.NewContext()
	}
	s := newSession(raw, name, cmp.Or(sel.User, c.AuthInfo), cmp.Or(sel.Cluster, c.Cluster), user, getenv)
	if s.Err != nil {
		return nil, s.Err
	}
	return s, nil
}

// newSession reads the session of context with that user and cluster.
func newSession(raw *clientcmdapi.Config, context, user, cluster string, over *settings.AuthOptions,
	getenv func(string) string) *Session {
	s := &Session{Context: context, Cluster: cluster, User: user, ClusterEntry: raw.Clusters[cluster]}
	if ai, ok := raw.AuthInfos[user]; ok {
		s.Exec = ai.Exec
	}
	s.Auth, s.Err = settings.ParseExecEntry(entryOf(s.Exec), over, getenv)
	if s.Err == nil {
		unbound := *s.Auth
		s.unbound = &unbound
		// The token this context gets: a fleet's per-cluster audience.
		s.Err = s.Auth.ForCluster(s.ExecCluster())
	}
	return s
}

// entryOf is the part of exec settings reads, nil without an entry.
func entryOf(exec *clientcmdapi.ExecConfig) *settings.ExecEntry {
	if exec == nil {
		return nil
	}
	e := &settings.ExecEntry{Command: exec.Command, Args: exec.Args}
	for _, v := range exec.Env {
		e.Env = append(e.Env, settings.EnvVar{Name: v.Name, Value: v.Value})
	}
	return e
}

// ExecCluster is the ExecCredential's spec.cluster kubectl would send for
// the session (provideClusterInfo), nil when the entry does not ask for
// it: what --allowed-server and a fleet's cluster extension are read from.
func (s *Session) ExecCluster() *execcred.Cluster {
	if s.ClusterEntry == nil || s.Exec == nil || !s.Exec.ProvideClusterInfo {
		return nil
	}
	c := s.ClusterEntry
	ec := &execcred.Cluster{Server: c.Server, TLSServerName: c.TLSServerName,
		InsecureSkipTLSVerify:    c.InsecureSkipTLSVerify,
		CertificateAuthorityData: c.CertificateAuthorityData, ProxyURL: c.ProxyURL}
	if len(ec.CertificateAuthorityData) == 0 && c.CertificateAuthority != "" {
		// client-go sends the file's certificates as data. The path is
		// the kubeconfig's: a regular file, bounded, never a FIFO.
		ec.CertificateAuthorityData, _, _ = safefile.ReadRegular(
			"cluster CA file", c.CertificateAuthority, 1<<20, safefile.ReadOptions{})
	}
	if ext, ok := c.Extensions[credspec.ExecExtensionName]; ok {
		if u, ok := ext.(*runtime.Unknown); ok {
			ec.Config = u.Raw
		}
	}
	return ec
}
