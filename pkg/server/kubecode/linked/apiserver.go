// Package linked is kube-apiserver's own code behind the kubecode.Code
// seam.
//
//   - claims predicts with its JWT authenticator, and proxy serves with it.
//   - setup --authentication-config checks a cluster's configuration as
//     kube-apiserver validates it.
//   - record parses requests with its request-info code
//     (pkg/server/recorder).
//
// Only cmd/kubectl-impersonate-apiserver imports this package: the code's
// package initialisers (component-base's metrics registry, CEL, the egress
// selector) would otherwise cost every kubectl-impersonate process about
// 10 ms.
package linked

import (
	"fmt"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/authn"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/authn/oidcflags"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/kubecode"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/recorder"
)

// Code is kubecode.Code on kube-apiserver's own code.
type Code struct{}

var _ kubecode.Code = Code{}

// authnOptions is the one construction of the authenticator kube-apiserver
// would run, for claims and proxy: an AuthenticationConfiguration file
// (validated as kube-apiserver validates it), else the legacy --oidc-*
// flags converted as kube-apiserver converts them. fill completes the flags
// before the conversion (claims takes the token's own iss and aud when none
// are given). rule describes the rules in one line.
func authnOptions(
	a kubecode.Authentication, fill func(*oidcflags.Legacy),
) (opts authn.Options, rule string, err error) {
	if a.ConfigFile != "" {
		cfg, err := authn.LoadConfigFile(a.ConfigFile)
		if err != nil {
			return opts, "", err
		}
		return authn.Options{Config: cfg},
			fmt.Sprintf("AuthenticationConfiguration %s (%d jwt authenticator(s))", a.ConfigFile, len(cfg.JWT)), nil
	}
	l := a.OIDC
	if fill != nil {
		fill(&l)
	}
	opts.Config, opts.SigningAlgs = authn.LegacyConfig(l)
	m := opts.Config.JWT[0].ClaimMappings
	rule = fmt.Sprintf("legacy --oidc-* flags: username = %q + claim %q", *m.Username.Prefix, m.Username.Claim)
	if m.Groups.Claim != "" {
		rule += fmt.Sprintf(", groups = %q + claim %q", *m.Groups.Prefix, m.Groups.Claim)
	}
	return opts, rule, nil
}

// StartRecorder starts record's endpoint (pkg/server/recorder).
func (Code) StartRecorder(c kubecode.RecordConfig) (kubecode.Recorder, error) {
	return recorder.Start(c)
}
