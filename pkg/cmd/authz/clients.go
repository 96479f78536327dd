package authz

import (
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/inspect"
)

// The seams of the inspection commands, in kubectl's shape:
// Complete(ctx, args) builds them from the kubeconfig flags (an
// *rbac.Client implements them all, pkg/cluster/inspect's interfaces) and resolves
// the arguments through discovery with them (resolveArgs, as kubectl
// resolves its arguments in Complete); Run only uses them, and the tests
// drive resolveArgs and Run with fakes.

// callerClient is the kubeconfig's own identity (--as aside): it lists the
// namespaces and reads the RBAC objects for access -A.
type callerClient interface {
	inspect.NamespaceLister
	inspect.RBACReader
}
