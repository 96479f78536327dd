package credential

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credspec"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/safefile"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/execcred"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/settings"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/tokencache"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/tokensource"
)

// contextSession is one kubeconfig context whose user runs this plugin:
// its names, its cluster entry, and the settings of its user's exec entry
// (err when they cannot be read).
type contextSession struct {
	Context, Cluster, User string
	cluster                *clientcmdapi.Cluster
	exec                   *clientcmdapi.ExecConfig
	auth                   *settings.AuthOptions
	err                    error
}

// identity names the cached token the context's settings select: the
// cache key's ID. Contexts with the same identity share one token.
func (s *contextSession) identity() string {
	if s.auth == nil {
		return ""
	}
	return s.auth.Key().ID()
}

// loadKubeconfig reads kubectl's kubeconfig (path, else $KUBECONFIG or
// ~/.kube/config, merged as kubectl merges them).
func loadKubeconfig(path string) (*clientcmdapi.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).RawConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	return &raw, nil
}

// sessionsOf are the contexts of raw whose user runs this plugin, sorted
// by name; names, when given, selects those contexts (each must exist).
// user, when set, holds flags of the command line that replace the exec
// entries' values (login and logout).
func sessionsOf(raw *clientcmdapi.Config, names []string, user *settings.AuthOptions, getenv func(string) string) ([]*contextSession, error) {
	for _, n := range names {
		if _, ok := raw.Contexts[n]; !ok {
			return nil, fmt.Errorf("the kubeconfig has no context %q (kubectl config get-contexts lists them)", n)
		}
	}
	var out []*contextSession
	for name, c := range raw.Contexts {
		if len(names) > 0 && !slices.Contains(names, name) {
			continue
		}
		ai, ok := raw.AuthInfos[c.AuthInfo]
		if !ok || ai.Exec == nil {
			if len(names) > 0 {
				return nil, fmt.Errorf("context %q: %w", name, cmdutil.ErrNotOurs)
			}
			continue
		}
		s := &contextSession{Context: name, Cluster: c.Cluster, User: c.AuthInfo, cluster: raw.Clusters[c.Cluster], exec: ai.Exec}
		s.auth, s.err = cmdutil.SettingsOfExecOverridden(ai.Exec, user, getenv)
		if errors.Is(s.err, cmdutil.ErrNotOurs) {
			if len(names) > 0 {
				return nil, fmt.Errorf("context %q: %w", name, s.err)
			}
			continue
		}
		if s.err == nil {
			// The token this context gets: a fleet's per-cluster audience.
			s.err = s.auth.ForCluster(s.execCluster())
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Context < out[j].Context })
	return out, nil
}

// execCluster is the ExecCredential's spec.cluster kubectl would send for
// the context (provideClusterInfo), nil when the entry does not ask for it:
// what --allowed-server is checked against.
func (s *contextSession) execCluster() *execcred.Cluster {
	if s.cluster == nil || !s.exec.ProvideClusterInfo {
		return nil
	}
	c := s.cluster
	ec := &execcred.Cluster{Server: c.Server, TLSServerName: c.TLSServerName, InsecureSkipTLSVerify: c.InsecureSkipTLSVerify,
		CertificateAuthorityData: c.CertificateAuthorityData, ProxyURL: c.ProxyURL}
	if len(ec.CertificateAuthorityData) == 0 && c.CertificateAuthority != "" {
		// client-go sends the file's certificates as data. The path is
		// the kubeconfig's: a regular file, bounded, never a FIFO.
		ec.CertificateAuthorityData, _, _ = safefile.ReadRegular("cluster CA file", c.CertificateAuthority, 1<<20, safefile.ReadOptions{})
	}
	if ext, ok := c.Extensions[credspec.ExecExtensionName]; ok {
		if u, ok := ext.(*runtime.Unknown); ok {
			ec.Config = u.Raw
		}
	}
	return ec
}

// cachedEntry reads the identity's cached token set, nil when none is
// cached; where says which storage held it.
func cachedEntry(ctx context.Context, store tokencache.Store, id string) (e *tokencache.Entry, where string, err error) {
	b, err := store.Get(ctx, id)
	if errors.Is(err, tokencache.ErrNotFound) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	where = store.Name()
	if a, ok := store.(*tokencache.Auto); ok && a.Where() != "" {
		where = a.Where()
	}
	e, err = tokencache.DecodeEntry(b)
	return e, where, err
}

// tokenSubject names the user of a JWT for display, from its claims
// (email, preferred_username, sub), "" for an opaque token. The token was
// verified when it was received; this reads it only to show whose it is.
func tokenSubject(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims map[string]any
	if json.Unmarshal(payload, &claims) != nil {
		return ""
	}
	for _, c := range []string{"email", "preferred_username", "sub"} {
		if v, ok := claims[c].(string); ok && v != "" {
			return v
		}
	}
	return ""
}

// entryToken is the token of e kubectl gets with the settings a, and its
// real expiry.
func entryToken(e *tokencache.Entry, a *settings.AuthOptions) (string, time.Time) {
	return tokensource.Select(e, a.UsesAccessToken())
}
