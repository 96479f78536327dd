package linked

import (
	"fmt"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/authn"
)

// CheckAuthConfig reads the cluster's AuthenticationConfiguration (as
// kube-apiserver validates it) and says, in one line with the fix, when
// it would refuse tokens of issuer whose aud is audience: no entry for
// the issuer, or an audience it does not expect ("": the issuer alone).
func (Code) CheckAuthConfig(path, issuer, audience string) (string, error) {
	cfg, err := authn.LoadConfigFile(path)
	if err != nil {
		return "", err
	}
	listed := false
	for _, j := range cfg.JWT {
		listed = listed || j.Issuer.URL == issuer
	}
	if !listed {
		return fmt.Sprintf("the cluster's AuthenticationConfiguration (%s) has no jwt issuer %q: the API server "+
			"refuses these tokens; add an entry with issuer.url: %s", path, issuer, issuer), nil
	}
	if audience == "" {
		return "", nil
	}
	return audienceNote(issuer, audience, cfg), nil
}
