// Package sudo enforces time-boxed, approved elevation in the impersonating
// proxy: a caller's request under a live SudoGrant goes upstream with the
// grant's group.
//
//   - A caller asks for it by impersonating itself with the extra GrantExtra
//     naming the grant (kubectl --as SELF --as-user-extra
//     kubectl-impersonate.io/sudo-grant=NAME), and nothing else.
//   - The grant must be in the request's namespace, the caller's, counted by
//     pkg/cluster/elevation's Check at the proxy's clock (its end is the
//     server-set creation time plus its duration), and the proxy's view of
//     grants and requests must be current: else 503, never a stale allow.
//   - The request then goes as the caller plus Group(namespace, role), with
//     the extras GrantExtra, ReasonExtra and TicketExtra, which
//     kube-apiserver's audit log shows; it ends (streams included) at the
//     grant's end or revocation.
//   - No token and no impersonation may carry a sudo: group or the sudo
//     extras (Reserved): only the proxy sets them.
package sudo

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation"
)

// The extras an elevated request carries upstream; only the proxy sets
// them.
const (
	GrantExtra  = elevation.GrantExtra
	ReasonExtra = elevation.ReasonExtra
	TicketExtra = elevation.TicketExtra
	// ViaExtra says the proxy made the request (it ends its tokens with the
	// grant): admission lets its TokenRequests live longer than direct
	// mode's (deploy/sudo/admission.yaml).
	ViaExtra = "kubectl-impersonate.io/sudo-via"
)

// GroupPrefix starts every elevation group (elevation.GroupPrefix): no
// token or impersonation may carry one.
const GroupPrefix = elevation.GroupPrefix

// Group is the group an elevated request in ns for role carries
// (elevation.GroupOf).
func Group(ns, role string) string { return elevation.GroupOf(ns, role) }

// Reserved says why an identity carries what only the proxy may set (a
// sudo: group or a sudo extra), "" when it does not.
func Reserved(u user.Info) string {
	for _, g := range u.GetGroups() {
		if strings.HasPrefix(strings.ToLower(strings.TrimSpace(g)), GroupPrefix) {
			return fmt.Sprintf("the group %q is an elevation's, which only the proxy sets", g)
		}
	}
	for k := range u.GetExtra() {
		switch strings.ToLower(strings.TrimSpace(k)) {
		case GrantExtra, ReasonExtra, TicketExtra, ViaExtra:
			return fmt.Sprintf("the extra %q is an elevation's, which only the proxy sets", k)
		}
	}
	return ""
}

// Errors of an elevated request: ErrRefused is 403, ErrNotCurrent 503.
var (
	ErrRefused    = errors.New("sudo refused")
	ErrNotCurrent = errors.New("the proxy's view of sudo grants is not current")
)

// Asked is the grant (its namespace and name) a caller's impersonation
// asks for ("" when none): an error when it names one but is not the
// caller's own identity with that one extra, NAMESPACE/NAME.
func Asked(asked, caller user.Info) (ns, name string, err error) {
	if _, ok := asked.GetExtra()[GrantExtra]; !ok {
		return "", "", nil
	}
	ns, name, found := namedGrant(asked.GetExtra())
	switch {
	case !found:
		return "", "", fmt.Errorf("%w: name one grant in the extra %s, as NAMESPACE/NAME", ErrRefused, GrantExtra)
	case asked.GetName() != caller.GetName():
		return "", "", fmt.Errorf("%w: a sudo request impersonates its caller (--as %s), not %s", ErrRefused,
			caller.GetName(), asked.GetName())
	case len(asked.GetGroups()) > 0 || (asked.GetUID() != "" && asked.GetUID() != caller.GetUID()) ||
		len(asked.GetExtra()) != 1:
		return "", "", fmt.Errorf("%w: a sudo request carries the caller's own identity and the extra %s alone "+
			"(no --as-group, --as-uid or other extras)", ErrRefused, GrantExtra)
	}
	return ns, name, nil
}

// namedGrant is the grant an elevated identity's extras name: one value of
// GrantExtra, NAMESPACE/NAME (the proxy's check and the webhook's).
func namedGrant(extra map[string][]string) (ns, name string, ok bool) {
	if refs := extra[GrantExtra]; len(refs) == 1 {
		return elevation.ParseRef(refs[0])
	}
	return "", "", false
}

// Elevation is a live grant's effect on one request.
type Elevation struct {
	// Namespace and Name are the grant's.
	Namespace, Name string
	// As is who the request goes upstream as.
	As user.Info
	// Ends is when the grant ends: no request is served under it after.
	Ends time.Time
	// Revoked is closed when the grant stops counting before Ends
	// (revoked, deleted, its request gone).
	Revoked <-chan struct{}
}

// Over says whether the grant stopped counting by now.
func (e *Elevation) Over(now time.Time) bool {
	select {
	case <-e.Revoked:
		return true
	default:
		return !now.Before(e.Ends)
	}
}

// Elevated is caller with the grant's group and extras.
func elevated(caller user.Info, ns, name, role, reason, ticket string) user.Info {
	extra := map[string][]string{}
	for k, v := range caller.GetExtra() {
		extra[k] = v
	}
	extra[GrantExtra] = []string{elevation.Ref(ns, name)}
	extra[ViaExtra] = []string{"proxy"}
	extra[ReasonExtra] = []string{reason}
	if ticket != "" {
		extra[TicketExtra] = []string{ticket}
	}
	groups := append(append([]string(nil), caller.GetGroups()...), Group(ns, role))
	return &user.DefaultInfo{Name: caller.GetName(), UID: caller.GetUID(), Groups: groups, Extra: extra}
}
