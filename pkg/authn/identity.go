package authn

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"k8s.io/apiserver/pkg/authentication/user"
)

// Identity is what kube-apiserver makes of a token: the user its
// authenticator returns (before the server adds system:authenticated), or
// why it answers 401.
type Identity struct {
	Username string              `json:"username,omitempty"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
	// Refused is the authenticator's reason to refuse the token; empty
	// when the token is accepted.
	Refused string `json:"refused,omitempty"`
}

// IdentityOf turns an Authenticate result into an Identity.
func IdentityOf(u user.Info, err error) Identity {
	if err != nil {
		return Identity{Refused: err.Error()}
	}
	return Identity{Username: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()}
}

// Differences lists where a predicted identity and the API server's
// SelfSubjectReview disagree. refused401 says the server answered 401.
// system:authenticated, which the server adds to every authenticated
// user, is not a difference.
func Differences(p Identity, server Identity, refused401 bool) []string {
	switch {
	case p.Refused != "" && refused401:
		return nil
	case p.Refused != "":
		return []string{fmt.Sprintf("predicted refused (%s), the API server accepts the token as %q", p.Refused, server.Username)}
	case refused401:
		return []string{fmt.Sprintf("predicted %q, the API server refuses the token (401)", p.Username)}
	}
	var d []string
	if p.Username != server.Username {
		d = append(d, fmt.Sprintf("username: predicted %q, the API server says %q", p.Username, server.Username))
	}
	if p.UID != server.UID {
		d = append(d, fmt.Sprintf("uid: predicted %q, the API server says %q", p.UID, server.UID))
	}
	for _, g := range p.Groups {
		if !slices.Contains(server.Groups, g) {
			d = append(d, fmt.Sprintf("group %q predicted, the API server does not report it", g))
		}
	}
	for _, g := range server.Groups {
		if g != user.AllAuthenticated && !slices.Contains(p.Groups, g) {
			d = append(d, fmt.Sprintf("group %q reported by the API server, not predicted from the token", g))
		}
	}
	keys := slices.Collect(maps.Keys(p.Extra))
	for k := range server.Extra {
		if _, ok := p.Extra[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Equal(p.Extra[k], server.Extra[k]) {
			d = append(d, fmt.Sprintf("extra %q: predicted %q, the API server says %q", k, p.Extra[k], server.Extra[k]))
		}
	}
	return d
}
