package identity

import (
	"context"

	authnv1 "k8s.io/api/authentication/v1"

	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/session"
)

// The seams of the identity commands, in kubectl's shape:
// Complete(ctx, args) builds them from the kubeconfig flags (a *kubeapi.Client implements
// them), Run only uses them, and the tests drive Run with fakes.

// selfSubjectReviewer returns the API server's SelfSubjectReview whole.
type selfSubjectReviewer interface {
	SelfSubjectReview(ctx context.Context) (*authnv1.SelfSubjectReview, string, error)
}

// gatedToken is the cached token of the session the kubectl flags select,
// as get-token would hand it out now to the cluster they select, through
// the one gate (KubeFlags.GatedConfig; session.ErrNotOurs when the
// context's user does not run this plugin).
func gatedToken(
	ctx context.Context, kube *cmdutil.KubeFlags, getenv func(string) string,
) (string, *session.TokenSource, error) {
	kube.Getenv = getenv
	cfg, ts, err := kube.GatedConfig(ctx)
	if err != nil {
		return "", ts, err
	}
	return cfg.BearerToken, ts, nil
}
