// Package elevation is time-boxed, approved elevation's state in the
// cluster, read and written as deploy/sudo defines it.
//
//   - Ask makes a SudoRequest for the caller (kube-apiserver's admission
//     checks it is the caller's, within the namespace's SudoPolicy).
//   - Approve signs the request's status (where admission sees the stored
//     requester), then makes its SudoGrant, copied from the request as the
//     cluster holds it and bound to its UID.
//   - Check says whether a grant counts: its request exists, was approved
//     by its approver, and the grant copies it; not revoked, not ended (its
//     creationTimestamp, the server's clock, plus its duration).
//   - Deny signs a request's denial; Revoke signs the grant's status;
//     Grants, Requests and Pending list.
package elevation

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/kubeapi"
)

// Group and Version are the objects' API group and version.
const (
	Group   = "sudo.kubectl-impersonate.io"
	Version = "v1alpha1"
)

// GrantExtra is the user extra naming the grant (NAMESPACE/NAME) a request
// is made under: the impersonating proxy reads it from the caller and sets
// it upstream, where kube-apiserver's audit log keeps it.
const GrantExtra = "kubectl-impersonate.io/sudo-grant"

// GroupPrefix starts every elevation group: only the impersonating proxy
// sets one, on a request under a grant.
const GroupPrefix = "sudo:"

// GroupOf is the group a request under a grant for role in ns carries: a
// RoleBinding in ns gives it the role.
func GroupOf(ns, role string) string { return GroupPrefix + ns + ":" + role }

// TextPattern is the pattern deploy/sudo/crds.yaml holds a reason and a
// ticket to: one line, no control or format character (bidirectional
// overrides among them: the text reads as stored, in kubectl get too), no
// line or paragraph separator, no space at either end (each goes into a
// header and the audit log as it is).
const TextPattern = `^[^\s\p{Cc}\p{Cf}\p{Zl}\p{Zp}]` +
	`([^\p{Cc}\p{Cf}\p{Zl}\p{Zp}]*[^\s\p{Cc}\p{Cf}\p{Zl}\p{Zp}])?$`

// CleanText is s as TextPattern admits it: control and format characters
// and line and paragraph separators (tabs, newlines, bidirectional
// overrides among them) as spaces, spaces trimmed from its ends. What a
// cluster admitted before its CRDs held the pattern still reaches headers
// clean.
func CleanText(s string) string {
	return strings.Trim(strings.Map(func(r rune) rune {
		if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) {
			return ' '
		}
		return r
	}, s), " ")
}

// Ref names a grant wherever it is named (the extra GrantExtra, messages,
// audit lines, labels): NAMESPACE/NAME.
func Ref(ns, name string) string { return ns + "/" + name }

// ParseRef splits a Ref; ok is false unless it is one namespace and one
// name, neither empty.
func ParseRef(ref string) (ns, name string, ok bool) {
	ns, name, ok = strings.Cut(ref, "/")
	return ns, name, ok && ns != "" && name != "" && !strings.Contains(name, "/")
}

// Client is what elevation asks of the API server (kubeapi.Client's).
type Client interface {
	Get(ctx context.Context, path string, out any) error
	Post(ctx context.Context, path string, in, out any) error
	Put(ctx context.Context, path string, in, out any) error
	WhoAmI(ctx context.Context) (*authnv1.UserInfo, string, error)
}

// RequestSpec is what a person asks for.
type RequestSpec struct {
	Requester       string `json:"requester"`
	Role            string `json:"role"`
	DurationSeconds int64  `json:"durationSeconds"`
	Reason          string `json:"reason"`
	Ticket          string `json:"ticket,omitempty"`
}

// RequestStatus is the decision, signed by who decided: an approval, or
// a denial (by an approver, or the requester withdrawing it).
type RequestStatus struct {
	ApprovedBy string `json:"approvedBy,omitempty"`
	DeniedBy   string `json:"deniedBy,omitempty"`
}

// Request is a SudoRequest.
type Request struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              RequestSpec    `json:"spec"`
	Status            *RequestStatus `json:"status,omitempty"`
}

// ApprovedBy is who approved r, "" when no one has.
func (r Request) ApprovedBy() string {
	if r.Status == nil {
		return ""
	}
	return r.Status.ApprovedBy
}

// DeniedBy is who denied r, "" when no one has.
func (r Request) DeniedBy() string {
	if r.Status == nil {
		return ""
	}
	return r.Status.DeniedBy
}

// GrantSpec is an approval: the request's fields and the approver.
type GrantSpec struct {
	Request         string `json:"request"`
	RequestUID      string `json:"requestUID"`
	Requester       string `json:"requester"`
	Role            string `json:"role"`
	DurationSeconds int64  `json:"durationSeconds"`
	Reason          string `json:"reason"`
	Ticket          string `json:"ticket,omitempty"`
	Approver        string `json:"approver"`
}

// GrantStatus is a revocation, signed by who revoked.
type GrantStatus struct {
	RevokedBy string `json:"revokedBy,omitempty"`
}

// Grant is a SudoGrant.
type Grant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              GrantSpec    `json:"spec"`
	Status            *GrantStatus `json:"status,omitempty"`
}

// Ref is g's Ref.
func (g Grant) Ref() string { return Ref(g.Namespace, g.Name) }

// RevokedBy is who revoked g, "" when no one has.
func (g Grant) RevokedBy() string {
	if g.Status == nil {
		return ""
	}
	return g.Status.RevokedBy
}

// Ends is when g ends: its creation time, which kube-apiserver set, plus
// its duration.
func (g Grant) Ends() time.Time {
	return g.CreationTimestamp.Add(time.Duration(g.Spec.DurationSeconds) * time.Second)
}

// Matches tells whether g approves r as r asks: what admission cannot
// check (a policy reads no other object).
func (g Grant) Matches(r Request) bool {
	return g.Name == r.Name && g.Namespace == r.Namespace && g.Spec.Request == r.Name &&
		g.Spec.RequestUID != "" && g.Spec.RequestUID == string(r.UID) &&
		g.Spec.Requester == r.Spec.Requester && g.Spec.Role == r.Spec.Role &&
		g.Spec.DurationSeconds == r.Spec.DurationSeconds && g.Spec.Reason == r.Spec.Reason &&
		g.Spec.Ticket == r.Spec.Ticket
}

// path is the API path of plural in ns ("" for every namespace), and of
// name when given.
func path(ns, plural, name string) string {
	p := "/apis/" + Group + "/" + Version + "/"
	if ns != "" {
		p += "namespaces/" + url.PathEscape(ns) + "/"
	}
	p += plural
	if name != "" {
		p += "/" + url.PathEscape(name)
	}
	return p
}

// Ask makes a SudoRequest in ns for the caller, named by the server.
func Ask(ctx context.Context, c Client, ns string, spec RequestSpec) (*Request, error) {
	me, _, err := c.WhoAmI(ctx)
	if err != nil {
		return nil, fmt.Errorf("asking who you are: %w", err)
	}
	spec.Requester = me.Username
	in := Request{TypeMeta: metav1.TypeMeta{APIVersion: Group + "/" + Version, Kind: "SudoRequest"},
		ObjectMeta: metav1.ObjectMeta{GenerateName: "sudo-", Namespace: ns}, Spec: spec}
	var out Request
	if err := c.Post(ctx, path(ns, "sudorequests", ""), in, &out); err != nil {
		return nil, fmt.Errorf("requesting %s in %s: %w", spec.Role, ns, err)
	}
	return &out, nil
}

// Approve signs the approval of the request name in ns on its status
// (unless the caller already did), then makes its grant, copied from the
// request as the cluster holds it.
func Approve(ctx context.Context, c Client, ns, name string) (*Grant, error) {
	var r Request
	if err := c.Get(ctx, path(ns, "sudorequests", name), &r); err != nil {
		return nil, fmt.Errorf("reading the request %s in %s: %w", name, ns, err)
	}
	me, _, err := c.WhoAmI(ctx)
	if err != nil {
		return nil, fmt.Errorf("asking who you are: %w", err)
	}
	if r.DeniedBy() != "" {
		return nil, fmt.Errorf("%s in %s was denied by %s", name, ns, r.DeniedBy())
	}
	switch r.ApprovedBy() {
	case "":
		r.Status = &RequestStatus{ApprovedBy: me.Username}
		if err := c.Put(ctx, path(ns, "sudorequests", name)+"/status", r, &r); err != nil {
			return nil, fmt.Errorf("approving %s in %s: %w", name, ns, err)
		}
	case me.Username: // approved, the grant not made: make it
	default:
		return nil, fmt.Errorf("%s in %s was already approved by %s", name, ns, r.ApprovedBy())
	}
	in := Grant{TypeMeta: metav1.TypeMeta{APIVersion: Group + "/" + Version, Kind: "SudoGrant"},
		ObjectMeta: metav1.ObjectMeta{Name: r.Name, Namespace: ns},
		Spec: GrantSpec{Request: r.Name, RequestUID: string(r.UID), Requester: r.Spec.Requester, Role: r.Spec.Role,
			DurationSeconds: r.Spec.DurationSeconds, Reason: r.Spec.Reason, Ticket: r.Spec.Ticket,
			Approver: me.Username}}
	var out Grant
	if err := c.Post(ctx, path(ns, "sudogrants", ""), in, &out); err != nil {
		return nil, fmt.Errorf("starting the grant of %s in %s: %w", name, ns, err)
	}
	return &out, nil
}

// Deny signs the denial of the request name in ns on its status: it will
// not be approved (its requester may deny it: a withdrawal).
func Deny(ctx context.Context, c Client, ns, name string) error {
	var r Request
	if err := c.Get(ctx, path(ns, "sudorequests", name), &r); err != nil {
		return fmt.Errorf("reading the request %s in %s: %w", name, ns, err)
	}
	me, _, err := c.WhoAmI(ctx)
	if err != nil {
		return fmt.Errorf("asking who you are: %w", err)
	}
	r.Status = &RequestStatus{DeniedBy: me.Username}
	if err := c.Put(ctx, path(ns, "sudorequests", name)+"/status", r, &r); err != nil {
		return fmt.Errorf("denying %s in %s: %w", name, ns, err)
	}
	return nil
}

// Check says whether g counts at now, given its request r (nil when there
// is none), and why not.
func Check(g Grant, r *Request, now time.Time) (bool, string) {
	switch {
	case r == nil:
		return false, "its request " + g.Spec.Request + " does not exist"
	case !g.Matches(*r):
		return false, "it does not copy its request " + r.Name + " (requester, role, duration, reason, ticket, UID)"
	case r.ApprovedBy() != g.Spec.Approver:
		return false, "its request was not approved by " + g.Spec.Approver
	case g.DeletionTimestamp != nil || r.DeletionTimestamp != nil:
		// A finalizer can keep a deleted object readable: deleted is gone.
		return false, "it or its request is being deleted"
	case g.RevokedBy() != "":
		return false, "revoked by " + g.RevokedBy()
	case !now.Before(g.Ends()):
		return false, "expired at " + g.Ends().UTC().Format(time.RFC3339)
	}
	return true, ""
}

// Revoke signs the revocation of the grant name in ns: it ends now.
func Revoke(ctx context.Context, c Client, ns, name string) error {
	var g Grant
	if err := c.Get(ctx, path(ns, "sudogrants", name), &g); err != nil {
		return fmt.Errorf("reading the grant %s in %s: %w", name, ns, err)
	}
	me, _, err := c.WhoAmI(ctx)
	if err != nil {
		return fmt.Errorf("asking who you are: %w", err)
	}
	g.Status = &GrantStatus{RevokedBy: me.Username}
	if err := c.Put(ctx, path(ns, "sudogrants", name)+"/status", g, &g); err != nil {
		return fmt.Errorf("revoking %s in %s: %w", name, ns, err)
	}
	return nil
}

// Live reads the grant ref names and its request and says whether the
// grant counts at now: the grant, or an error saying why not ("grant G
// expired at T", "revoked by", a request that does not match).
func Live(ctx context.Context, c Client, ref string, now time.Time) (*Grant, error) {
	ns, name, ok := ParseRef(ref)
	if !ok {
		return nil, fmt.Errorf("%q names no sudo grant: NAMESPACE/NAME", ref)
	}
	var g Grant
	if err := c.Get(ctx, path(ns, "sudogrants", name), &g); err != nil {
		return nil, fmt.Errorf("reading the grant %s: %w", ref, err)
	}
	var r *Request
	var ae *kubeapi.APIError
	switch err := c.Get(ctx, path(ns, "sudorequests", g.Spec.Request), &r); {
	case errors.As(err, &ae) && ae.Code == 404:
		r = nil
	case err != nil:
		return nil, fmt.Errorf("reading the request of grant %s: %w", ref, err)
	}
	if ok, why := Check(g, r, now); !ok {
		return nil, fmt.Errorf("grant %s %s", ref, why)
	}
	return &g, nil
}

// Note is a live grant of an identity's, as why and access name it.
type Note struct {
	// Grant is its Ref.
	Grant    string    `json:"grant"`
	Role     string    `json:"role"`
	Approver string    `json:"approver"`
	Ends     time.Time `json:"ends"`
	// Allows: the answer is yes for an identity carrying the grant's
	// group, through a binding of it (or bindings that could not be
	// read): allowed until Ends.
	Allows bool `json:"allows"`
}

// NoteOf is g's Note.
func NoteOf(g Grant, allows bool) Note {
	return Note{Grant: g.Ref(), Role: g.Spec.Role, Approver: g.Spec.Approver, Ends: g.Ends().UTC(), Allows: allows}
}

// String is the note as why and access print it.
func (n Note) String() string {
	if n.Allows {
		return fmt.Sprintf("Allowed until %s by sudo grant %s (role %s) approved by %s.", n.Ends.Format(time.RFC3339),
			n.Grant, n.Role, n.Approver)
	}
	ns, _, _ := ParseRef(n.Grant)
	return fmt.Sprintf("You hold sudo grant %s (role %s, approved by %s) until %s: requests made under it through "+
		"the impersonating proxy (kubectl impersonate sudo -- COMMAND) carry its group %s.", n.Grant, n.Role,
		n.Approver, n.Ends.Format(time.RFC3339), GroupOf(ns, n.Role))
}

// RequestOf is g's request among reqs, nil when there is none.
func RequestOf(g Grant, reqs []Request) *Request {
	for i := range reqs {
		if reqs[i].Namespace == g.Namespace && reqs[i].Name == g.Spec.Request {
			return &reqs[i]
		}
	}
	return nil
}

// Grants lists the grants of ns ("" for every namespace).
func Grants(ctx context.Context, c Client, ns string) ([]Grant, error) {
	return list[Grant](ctx, c, ns, "sudogrants")
}

// Requests lists the requests of ns ("" for every namespace).
func Requests(ctx context.Context, c Client, ns string) ([]Request, error) {
	return list[Request](ctx, c, ns, "sudorequests")
}

// list lists plural in ns ("" for every namespace): one GET, its items.
func list[T any](ctx context.Context, c Client, ns, plural string) ([]T, error) {
	var l struct {
		Items []T `json:"items"`
	}
	if err := c.Get(ctx, path(ns, plural, ""), &l); err != nil {
		return nil, fmt.Errorf("listing %s: %w", plural, err)
	}
	return l.Items, nil
}

// Pending are the requests no one approved or denied, oldest first.
func Pending(reqs []Request) []Request {
	var out []Request
	for _, r := range reqs {
		if r.ApprovedBy() == "" && r.DeniedBy() == "" {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Request) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out
}
