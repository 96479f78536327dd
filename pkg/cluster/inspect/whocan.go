package inspect

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rbaceval"
)

// WhoCan is who-can's use case: the RBAC grants of t (resolved by
// WhyTarget, its RBAC objects read in readNS), and with verify each
// subject asked of the authorizer chain (Verify).
func WhoCan(
	ctx context.Context, c WhoCanClient, t rbaceval.Target, readNS string, verify bool,
) ([]rbaceval.Grant, error) {
	bindings, err := c.ReadRBAC(ctx, readNS)
	if err != nil {
		return nil, fmt.Errorf("%w (who-can needs to list roles and bindings)", err)
	}
	grants := bindings.WhoCan(t)
	if grants == nil {
		grants = []rbaceval.Grant{}
	}
	if verify {
		if err := Verify(ctx, c, t, grants); err != nil {
			return nil, err
		}
	}
	return grants, nil
}

// Verify asks the chain about each subject of each grant (8 at a time),
// where the grant applies: a RoleBinding's subjects in its namespace, a
// ClusterRoleBinding's where the question is asked; and records, on each
// grant, the subjects it denies.
func Verify(ctx context.Context, c WhoCanClient, target rbaceval.Target, grants []rbaceval.Grant) error {
	type question struct {
		subject rbacv1.Subject
		target  rbaceval.Target
	}
	verdicts := map[string]string{} // subject@namespace → "" (allowed) or the denial
	var questions []question
	key := func(s rbacv1.Subject, ns string) string { return SubjectName(s) + "@" + ns }
	where := func(g rbaceval.Grant) rbaceval.Target {
		t := target
		if g.BindingKind == "RoleBinding" {
			t.Namespace = g.Namespace
		}
		return t
	}
	for _, g := range grants {
		t := where(g)
		for _, s := range g.Subjects {
			if _, seen := verdicts[key(s, t.Namespace)]; !seen {
				verdicts[key(s, t.Namespace)] = ""
				questions = append(questions, question{s, t})
			}
		}
	}
	var mu sync.Mutex
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(8)
	for _, q := range questions {
		eg.Go(func() error {
			st, err := c.VerifySubject(ectx, q.subject, q.target)
			if err != nil {
				return err
			}
			if !st.Allowed {
				reason := st.Reason
				if reason == "" {
					reason = "denied by the authorizer chain"
				}
				mu.Lock()
				verdicts[key(q.subject, q.target.Namespace)] = reason
				mu.Unlock()
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return err
	}
	for i := range grants {
		ns := where(grants[i]).Namespace
		for _, s := range grants[i].Subjects {
			if reason := verdicts[key(s, ns)]; reason != "" {
				if grants[i].Denied == nil {
					grants[i].Denied = map[string]string{}
				}
				grants[i].Denied[SubjectName(s)] = reason
			}
		}
	}
	return nil
}

// SubjectName is Kind:name, Kind:namespace/name for a service account.
func SubjectName(s rbacv1.Subject) string {
	if s.Kind == rbacv1.ServiceAccountKind {
		return s.Kind + ":" + s.Namespace + "/" + s.Name
	}
	return s.Kind + ":" + s.Name
}

// SubjectAccess is one subject of who-can --by-subject: where it may act
// (every namespace through a ClusterRoleBinding, or the namespaces of its
// RoleBindings) and the bindings that grant it.
type SubjectAccess struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Namespace is a service account's.
	Namespace   string   `json:"namespace,omitempty"`
	ClusterWide bool     `json:"clusterWide"`
	Namespaces  []string `json:"namespaces,omitempty"`
	// Bindings are "ClusterRoleBinding NAME" and "RoleBinding NS/NAME".
	Bindings []string `json:"bindings"`
	// Denied is the chain's denial (--verify), where it denies.
	Denied string `json:"denied,omitempty"`
}

// BySubject groups grants by subject, a service account subject without a
// namespace taking its RoleBinding's (as RBAC does), sorted by kind and name.
func BySubject(grants []rbaceval.Grant) []SubjectAccess {
	index := map[string]*SubjectAccess{}
	var keys []string
	for _, g := range grants {
		binding := g.BindingKind + " " + g.Binding
		if g.Namespace != "" {
			binding = g.BindingKind + " " + g.Namespace + "/" + g.Binding
		}
		for _, sub := range g.Subjects {
			if sub.Kind == rbacv1.ServiceAccountKind && sub.Namespace == "" {
				sub.Namespace = g.Namespace
			}
			key := SubjectName(sub)
			a, ok := index[key]
			if !ok {
				a = &SubjectAccess{Kind: sub.Kind, Name: sub.Name}
				if sub.Kind == rbacv1.ServiceAccountKind {
					a.Namespace = sub.Namespace
				}
				index[key] = a
				keys = append(keys, key)
			}
			a.Bindings = append(a.Bindings, binding)
			if g.BindingKind == "ClusterRoleBinding" {
				a.ClusterWide = true
			} else if !slices.Contains(a.Namespaces, g.Namespace) {
				a.Namespaces = append(a.Namespaces, g.Namespace)
			}
			if reason, denied := g.Denied[key]; denied && a.Denied == "" {
				a.Denied = reason
			}
		}
	}
	slices.Sort(keys)
	out := make([]SubjectAccess, 0, len(keys))
	for _, k := range keys {
		a := index[k]
		slices.Sort(a.Namespaces)
		if a.ClusterWide {
			a.Namespaces = nil // every one
		}
		out = append(out, *a)
	}
	return out
}
