package sudo

import (
	"context"
	"errors"
	"fmt"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
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
// made. It does nothing while the view of grants is not current.
func (c *Controller) Reconcile(ctx context.Context) error {
	if err := c.Store.Current(); err != nil {
		return err
	}
	live := map[string]elevation.Grant{}
	for _, g := range c.Store.Live() {
		live[string(g.UID)] = g
	}
	rbac := c.Client.RbacV1()
	sel := metav1.ListOptions{LabelSelector: elevation.GrantLabel}
	have := map[string]bool{} // live grants' UIDs whose ClusterRole exists
	var errs []error
	gone := func(labels map[string]string) bool {
		_, ok := live[labels[elevation.GrantLabel]]
		return !ok
	}
	del := func(what, ns, name string, f func(context.Context, string, metav1.DeleteOptions) error) {
		if err := f(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s %s/%s: %w", what, ns, name, err))
			return
		}
		c.log("sudo-controller: removed %s %s/%s", what, ns, name)
	}
	if l, err := rbac.ClusterRoleBindings().List(ctx, sel); err == nil {
		for _, o := range l.Items {
			if gone(o.Labels) {
				del("ClusterRoleBinding", "", o.Name, rbac.ClusterRoleBindings().Delete)
			}
		}
	} else {
		errs = append(errs, err)
	}
	if l, err := rbac.RoleBindings("").List(ctx, sel); err == nil {
		for _, o := range l.Items {
			if gone(o.Labels) {
				del("RoleBinding", o.Namespace, o.Name, rbac.RoleBindings(o.Namespace).Delete)
			}
		}
	} else {
		errs = append(errs, err)
	}
	if l, err := rbac.ClusterRoles().List(ctx, sel); err == nil {
		for _, o := range l.Items {
			if gone(o.Labels) {
				del("ClusterRole", "", o.Name, rbac.ClusterRoles().Delete)
			} else {
				have[o.Labels[elevation.GrantLabel]] = true
			}
		}
	} else {
		errs = append(errs, err)
	}
	if l, err := rbac.Roles("").List(ctx, sel); err == nil {
		for _, o := range l.Items {
			if gone(o.Labels) {
				del("Role", o.Namespace, o.Name, rbac.Roles(o.Namespace).Delete)
			}
		}
	} else {
		errs = append(errs, err)
	}
	for uid, g := range live {
		if have[uid] {
			continue
		}
		if err := c.materialise(ctx, g); err != nil {
			errs = append(errs, fmt.Errorf("materialising grant %s/%s: %w", g.Namespace, g.Name, err))
		}
	}
	return errors.Join(errs...)
}

// materialise makes g's four objects (the ClusterRole last: its presence
// says the grant is done), from its role as the cluster holds it: the Role
// of that name in the grant's namespace, else the ClusterRole.
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
	// Made in this order: the bindings before the ClusterRole, whose
	// presence says the grant is done (an already made one is kept).
	opts := metav1.CreateOptions{}
	for _, create := range []func() error{
		func() error { _, err := rbac.Roles(g.Namespace).Create(ctx, o.Role, opts); return err },
		func() error { _, err := rbac.RoleBindings(g.Namespace).Create(ctx, o.RoleBinding, opts); return err },
		func() error { _, err := rbac.ClusterRoleBindings().Create(ctx, o.ClusterRoleBinding, opts); return err },
		func() error { _, err := rbac.ClusterRoles().Create(ctx, o.ClusterRole, opts); return err },
	} {
		if err := create(); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	c.log("sudo-controller: materialised grant %s/%s (%s for %s until %s)", g.Namespace, g.Name, g.Spec.Role,
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
