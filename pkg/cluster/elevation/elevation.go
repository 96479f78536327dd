// Package elevation is time-boxed, approved elevation's state in the
// cluster, read and written as deploy/sudo defines it.
//
//   - Ask makes a SudoRequest for the caller (kube-apiserver's admission
//     checks it is the caller's, within the namespace's SudoPolicy).
//   - Approve makes the SudoGrant of a request, copied from the request as
//     the cluster holds it, signed by the caller.
//   - A grant ends at its creationTimestamp (the server's clock) plus its
//     duration (Ends); Revoke deletes it.
//   - Grants and Requests list them; Pending is the requests not approved.
package elevation

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Group and Version are the objects' API group and version.
const (
	Group   = "sudo.kubectl-impersonate.io"
	Version = "v1alpha1"
)

// Client is what elevation asks of the API server (kubeapi.Client's).
type Client interface {
	Get(ctx context.Context, path string, out any) error
	Post(ctx context.Context, path string, in, out any) error
	Delete(ctx context.Context, path string) error
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

// Request is a SudoRequest.
type Request struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              RequestSpec `json:"spec"`
}

// GrantSpec is an approval: the request's fields and the approver.
type GrantSpec struct {
	Request         string `json:"request"`
	Requester       string `json:"requester"`
	Role            string `json:"role"`
	DurationSeconds int64  `json:"durationSeconds"`
	Reason          string `json:"reason"`
	Ticket          string `json:"ticket,omitempty"`
	Approver        string `json:"approver"`
}

// Grant is a SudoGrant.
type Grant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              GrantSpec `json:"spec"`
}

// Ends is when g ends: its creation time, which kube-apiserver set, plus
// its duration.
func (g Grant) Ends() time.Time {
	return g.CreationTimestamp.Add(time.Duration(g.Spec.DurationSeconds) * time.Second)
}

// Matches tells whether g approves r as r asks: the enforcement checks a
// grant against its request, which admission cannot.
func (g Grant) Matches(r Request) bool {
	return g.Name == r.Name && g.Namespace == r.Namespace && g.Spec.Request == r.Name &&
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

// Approve makes the grant of the request name in ns, as the cluster holds
// the request, signed by the caller.
func Approve(ctx context.Context, c Client, ns, name string) (*Grant, error) {
	var r Request
	if err := c.Get(ctx, path(ns, "sudorequests", name), &r); err != nil {
		return nil, fmt.Errorf("reading the request %s in %s: %w", name, ns, err)
	}
	me, _, err := c.WhoAmI(ctx)
	if err != nil {
		return nil, fmt.Errorf("asking who you are: %w", err)
	}
	in := Grant{TypeMeta: metav1.TypeMeta{APIVersion: Group + "/" + Version, Kind: "SudoGrant"},
		ObjectMeta: metav1.ObjectMeta{Name: r.Name, Namespace: ns},
		Spec: GrantSpec{Request: r.Name, Requester: r.Spec.Requester, Role: r.Spec.Role,
			DurationSeconds: r.Spec.DurationSeconds, Reason: r.Spec.Reason, Ticket: r.Spec.Ticket,
			Approver: me.Username}}
	var out Grant
	if err := c.Post(ctx, path(ns, "sudogrants", ""), in, &out); err != nil {
		return nil, fmt.Errorf("approving %s in %s: %w", name, ns, err)
	}
	return &out, nil
}

// Revoke deletes the grant name in ns: it ends now.
func Revoke(ctx context.Context, c Client, ns, name string) error {
	if err := c.Delete(ctx, path(ns, "sudogrants", name)); err != nil {
		return fmt.Errorf("revoking %s in %s: %w", name, ns, err)
	}
	return nil
}

// Grants lists the grants of ns ("" for every namespace).
func Grants(ctx context.Context, c Client, ns string) ([]Grant, error) {
	var l struct {
		Items []Grant `json:"items"`
	}
	if err := c.Get(ctx, path(ns, "sudogrants", ""), &l); err != nil {
		return nil, fmt.Errorf("listing grants: %w", err)
	}
	return l.Items, nil
}

// Requests lists the requests of ns ("" for every namespace).
func Requests(ctx context.Context, c Client, ns string) ([]Request, error) {
	var l struct {
		Items []Request `json:"items"`
	}
	if err := c.Get(ctx, path(ns, "sudorequests", ""), &l); err != nil {
		return nil, fmt.Errorf("listing requests: %w", err)
	}
	return l.Items, nil
}

// Pending are the requests no grant approves, oldest first.
func Pending(reqs []Request, grants []Grant) []Request {
	var out []Request
	for _, r := range reqs {
		if !slices.ContainsFunc(grants, func(g Grant) bool { return g.Namespace == r.Namespace && g.Name == r.Name }) {
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
