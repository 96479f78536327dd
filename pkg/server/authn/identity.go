package authn

import (
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/kubecode"
)

// IdentityOf turns an Authenticate result into the seam's Identity.
func IdentityOf(u user.Info, err error) kubecode.Identity {
	if err != nil {
		return kubecode.Identity{Refused: err.Error()}
	}
	return kubecode.Identity{Username: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()}
}
