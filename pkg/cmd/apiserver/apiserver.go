// Package apiserver runs kube-apiserver's own code for the commands that
// need it: claims predicts with its JWT authenticator, proxy serves with it,
// setup --authentication-config checks a cluster's configuration as
// kube-apiserver validates it. Only cmd/kubectl-impersonate-apiserver
// imports this package: the code's package initialisers (component-base's
// metrics registry, CEL, the egress selector) would otherwise cost every
// kubectl-impersonate process about 10 ms. pkg/cmd defines the commands
// (flags, help, Validate) and hands them here through cmd.APIServerCode.
package apiserver

import (
	"fmt"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/authn"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/authn/oidcflags"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd"
	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
)

// Code implements cmd.APIServerCode.
type Code struct{}

var _ cmd.APIServerCode = Code{}

// authnOptions is the one construction of the authenticator kube-apiserver
// would run, for claims and proxy: an AuthenticationConfiguration file
// (validated as kube-apiserver validates it), else the legacy --oidc-*
// flags converted as kube-apiserver converts them. fill completes the flags
// before the conversion (claims takes the token's own iss and aud when none
// are given). rule describes the rules in one line.
func authnOptions(authConfig string, oidc *cmdutil.OIDCFlags, fill func(*oidcflags.Legacy)) (opts authn.Options, rule string, err error) {
	if authConfig != "" {
		cfg, err := authn.LoadConfigFile(authConfig)
		if err != nil {
			return opts, "", err
		}
		return authn.Options{Config: cfg}, fmt.Sprintf("AuthenticationConfiguration %s (%d jwt authenticator(s))", authConfig, len(cfg.JWT)), nil
	}
	l, err := oidc.Values()
	if err != nil {
		return opts, "", err
	}
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
