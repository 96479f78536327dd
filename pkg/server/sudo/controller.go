package sudo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
)

// Controller is direct mode's (no proxy): it materialises each live grant
// as elevation.Direct's RBAC, and removes what serves a grant that ended,
// was revoked or is gone, every Interval, while it leads (a
// coordination.k8s.io Lease: any number of replicas). While no replica
// runs, ended grants keep their RBAC: direct mode is fail-open then
// (docs/elevation.md measures it).
type Controller struct {
	Store  *Store
	Client kubernetes.Interface
	// Interval is how often it reconciles (DefaultInterval when 0).
	Interval time.Duration
	Log      func(string)
}

// DefaultInterval is Controller.Interval's default.
const DefaultInterval = time.Second

func (c *Controller) log(format string, args ...any) {
	if c.Log != nil {
		c.Log(logging.OneLine(fmt.Sprintf(format, args...), 500))
	}
}

// Reconcile makes the cluster's materialised RBAC the live grants': what
// serves no live grant is deleted first, then what a live grant lacks is
// made. It does nothing while the view of grants is not current. Only
// objects named as materialised ones (elevation.DirectPrefix) and labelled
// so are ever deleted: a label put on other RBAC does not get it removed.
func (c *Controller) Reconcile(ctx context.Context) error {
	if err := c.Store.Current(); err != nil {
		return err
	}
	live := map[string]elevation.Grant{}
	for _, g := range c.Store.Live() {
		live[string(g.UID)] = g
	}
	sel := metav1.ListOptions{LabelSelector: elevation.GrantLabel}
	// done counts, per live grant's UID, its objects found as they should
	// be named: the grant is materialised when all four are.
	done := map[string]int{}
	var errs []error
	// keep says whether a listed object serves a live grant (counted), or
	// is a materialised one to delete; false, false: not ours.
	keep := func(name string, labels map[string]string) (ours, serves bool) {
		if !strings.HasPrefix(name, elevation.DirectPrefix) {
			return false, false
		}
		g, ok := live[labels[elevation.GrantLabel]]
		if !ok || name != elevation.DirectName(g) {
			return true, false
		}
		done[string(g.UID)]++
		return true, true
	}
	del := func(what, ns, name string, f func(context.Context, string, metav1.DeleteOptions) error) {
		if err := f(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s %s/%s: %w", what, ns, name, err))
			return
		}
		c.log("sudo-controller: removed %s %s/%s", what, ns, name)
	}
	// Bindings first: what they bind stops granting at once.
	for _, k := range c.kinds() {
		objs, err := k.list(ctx, sel)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, o := range objs {
			if ours, serves := keep(o.Name, o.Labels); ours && !serves {
				del(k.what, o.Namespace, o.Name, k.delete(o.Namespace))
			}
		}
	}
	for uid, g := range live {
		if done[uid] == 4 {
			continue
		}
		if err := c.materialise(ctx, g); err != nil {
			errs = append(errs, fmt.Errorf("materialising grant %s: %w", g.Ref(), err))
		}
	}
	return errors.Join(errs...)
}

// kind is one of the four kinds a grant is materialised as.
type kind struct {
	what   string
	list   func(context.Context, metav1.ListOptions) ([]metav1.ObjectMeta, error)
	delete func(ns string) func(context.Context, string, metav1.DeleteOptions) error
}

// kinds are the four, bindings first.
func (c *Controller) kinds() []kind {
	rbac := c.Client.RbacV1()
	metas := func(n int, at func(int) metav1.ObjectMeta) []metav1.ObjectMeta {
		out := make([]metav1.ObjectMeta, n)
		for i := range out {
			out[i] = at(i)
		}
		return out
	}
	return []kind{
		{"ClusterRoleBinding", func(ctx context.Context, o metav1.ListOptions) ([]metav1.ObjectMeta, error) {
			l, err := rbac.ClusterRoleBindings().List(ctx, o)
			if err != nil {
				return nil, err
			}
			return metas(len(l.Items), func(i int) metav1.ObjectMeta { return l.Items[i].ObjectMeta }), nil
		}, func(string) func(context.Context, string, metav1.DeleteOptions) error {
			return rbac.ClusterRoleBindings().Delete
		}},
		{"RoleBinding", func(ctx context.Context, o metav1.ListOptions) ([]metav1.ObjectMeta, error) {
			l, err := rbac.RoleBindings("").List(ctx, o)
			if err != nil {
				return nil, err
			}
			return metas(len(l.Items), func(i int) metav1.ObjectMeta { return l.Items[i].ObjectMeta }), nil
		}, func(ns string) func(context.Context, string, metav1.DeleteOptions) error {
			return rbac.RoleBindings(ns).Delete
		}},
		{"ClusterRole", func(ctx context.Context, o metav1.ListOptions) ([]metav1.ObjectMeta, error) {
			l, err := rbac.ClusterRoles().List(ctx, o)
			if err != nil {
				return nil, err
			}
			return metas(len(l.Items), func(i int) metav1.ObjectMeta { return l.Items[i].ObjectMeta }), nil
		}, func(string) func(context.Context, string, metav1.DeleteOptions) error {
			return rbac.ClusterRoles().Delete
		}},
		{"Role", func(ctx context.Context, o metav1.ListOptions) ([]metav1.ObjectMeta, error) {
			l, err := rbac.Roles("").List(ctx, o)
			if err != nil {
				return nil, err
			}
			return metas(len(l.Items), func(i int) metav1.ObjectMeta { return l.Items[i].ObjectMeta }), nil
		}, func(ns string) func(context.Context, string, metav1.DeleteOptions) error {
			return rbac.Roles(ns).Delete
		}},
	}
}

// materialise makes g's four objects, from its role as the cluster holds
// it: the Role of that name in the grant's namespace, else the
// ClusterRole. An object of that name already there that is not as it
// would make it (made before by someone else: an attacker's review found a
// binding of another subject waiting for the grant) is replaced.
func (c *Controller) materialise(ctx context.Context, g elevation.Grant) error {
	rbac := c.Client.RbacV1()
	var rules []rbacv1.PolicyRule
	role, err := rbac.Roles(g.Namespace).Get(ctx, g.Spec.Role, metav1.GetOptions{})
	switch {
	case err == nil:
		rules = role.Rules
	case apierrors.IsNotFound(err):
		cr, err := rbac.ClusterRoles().Get(ctx, g.Spec.Role, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading the role %s: %w", g.Spec.Role, err)
		}
		rules = cr.Rules
	default:
		return fmt.Errorf("reading the role %s: %w", g.Spec.Role, err)
	}
	o := elevation.Direct(g, rules)
	opts, name, ns := metav1.CreateOptions{}, o.Role.Name, g.Namespace
	same := func(labels map[string]string, a, b any) bool {
		return labels[elevation.GrantLabel] == string(g.UID) && equality.Semantic.DeepEqual(a, b)
	}
	for _, step := range []struct {
		what   string
		create func() error
		same   func() (bool, error)
		del    func() error
	}{
		{"Role", func() error { _, err := rbac.Roles(ns).Create(ctx, o.Role, opts); return err },
			func() (bool, error) {
				x, err := rbac.Roles(ns).Get(ctx, name, metav1.GetOptions{})
				return err == nil && same(x.Labels, x.Rules, o.Role.Rules), err
			}, func() error { return rbac.Roles(ns).Delete(ctx, name, metav1.DeleteOptions{}) }},
		{"RoleBinding", func() error { _, err := rbac.RoleBindings(ns).Create(ctx, o.RoleBinding, opts); return err },
			func() (bool, error) {
				x, err := rbac.RoleBindings(ns).Get(ctx, name, metav1.GetOptions{})
				return err == nil && same(x.Labels, []any{x.Subjects, x.RoleRef},
					[]any{o.RoleBinding.Subjects, o.RoleBinding.RoleRef}), err
			}, func() error { return rbac.RoleBindings(ns).Delete(ctx, name, metav1.DeleteOptions{}) }},
		{"ClusterRoleBinding", func() error {
			_, err := rbac.ClusterRoleBindings().Create(ctx, o.ClusterRoleBinding, opts)
			return err
		}, func() (bool, error) {
			x, err := rbac.ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{})
			return err == nil && same(x.Labels, []any{x.Subjects, x.RoleRef},
				[]any{o.ClusterRoleBinding.Subjects, o.ClusterRoleBinding.RoleRef}), err
		}, func() error { return rbac.ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{}) }},
		{"ClusterRole", func() error { _, err := rbac.ClusterRoles().Create(ctx, o.ClusterRole, opts); return err },
			func() (bool, error) {
				x, err := rbac.ClusterRoles().Get(ctx, name, metav1.GetOptions{})
				return err == nil && same(x.Labels, x.Rules, o.ClusterRole.Rules), err
			}, func() error { return rbac.ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{}) }},
	} {
		err := step.create()
		if !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return fmt.Errorf("making %s %s: %w", step.what, name, err)
			}
			continue
		}
		ok, err := step.same()
		if err != nil {
			return fmt.Errorf("reading %s %s: %w", step.what, name, err)
		}
		if ok {
			continue
		}
		c.log("sudo-controller: %s %s was there, not as grant %s makes it: replaced", step.what, name, g.Ref())
		if err := step.del(); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("replacing %s %s: %w", step.what, name, err)
		}
		if err := step.create(); err != nil {
			return fmt.Errorf("replacing %s %s: %w", step.what, name, err)
		}
	}
	c.log("sudo-controller: materialised grant %s (%s for %s until %s)", g.Ref(), g.Spec.Role,
		g.Spec.Requester, g.Ends().UTC().Format(time.RFC3339))
	return nil
}

// Run reconciles every Interval until ctx ends; errors are logged and
// retried.
func (c *Controller) Run(ctx context.Context) {
	interval := c.Interval
	if interval == 0 {
		interval = DefaultInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := c.Reconcile(ctx); err != nil && ctx.Err() == nil {
			c.log("sudo-controller: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Lead runs c while this replica (id) holds the Lease name in ns, until
// ctx ends.
func (c *Controller) Lead(ctx context.Context, ns, name, id string) {
	lock := &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Client: c.Client.CoordinationV1(), LockConfig: resourcelock.ResourceLockConfig{Identity: id}}
	for ctx.Err() == nil {
		leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{Lock: lock, ReleaseOnCancel: true,
			LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					c.log("sudo-controller: %s leads (lease %s/%s)", id, ns, name)
					c.Run(ctx)
				},
				OnStoppedLeading: func() { c.log("sudo-controller: %s stopped leading", id) },
			}})
	}
}
