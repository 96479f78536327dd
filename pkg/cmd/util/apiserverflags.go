package util

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/settings"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/authn/oidcflags"
)

// OIDCFlags are kube-apiserver's legacy --oidc-* flags, under
// kube-apiserver's names (an API server's flags paste as they are), shared
// by claims and proxy. The provider's CA is --oidc-certificate-authority,
// as in get-token; kube-apiserver's --oidc-ca-file is a deprecated alias.
type OIDCFlags struct {
	oidcflags.Legacy
	// CAFile is a PEM CA for the issuer's discovery and JWKS.
	CAFile string
	flags  *pflag.FlagSet
	names  []string // the flags AddFlags bound, aliases excluded
}

// AddFlags binds the flags; aliases are older names of this tool's, and
// using one writes a deprecation line to warn.
func (o *OIDCFlags) AddFlags(f *pflag.FlagSet, aliases map[string]string, warn io.Writer) {
	if o.UsernameClaim == "" {
		o.UsernameClaim = "sub"
	}
	// Bound on a set of their own first, so that Given knows their names.
	own := pflag.NewFlagSet("oidc", pflag.ContinueOnError)
	own.StringVar(&o.IssuerURL, "oidc-issuer-url", "", "Issuer of the tokens (https), as kube-apiserver's "+
		"--oidc-issuer-url")
	own.StringSliceVar(&o.ClientIDs, "oidc-client-id", nil, "Accepted audience, as kube-apiserver's --oidc-client-id "+
		"(repeatable here)")
	own.StringVar(&o.CAFile, "oidc-certificate-authority", "", "PEM file of a CA for the issuer's discovery and JWKS "+
		"(kube-apiserver's --oidc-ca-file)")
	own.StringVar(&o.UsernameClaim, "oidc-username-claim", o.UsernameClaim, "Claim of the username, as "+
		"kube-apiserver's --oidc-username-claim")
	own.StringVar(&o.UsernamePrefix, "oidc-username-prefix", "", "As kube-apiserver's --oidc-username-prefix: unset "+
		"means \"<issuer>#\" unless the claim is email; - means none")
	own.StringVar(&o.GroupsClaim, "oidc-groups-claim", "", "Claim of the groups, as kube-apiserver's "+
		"--oidc-groups-claim")
	own.StringVar(&o.GroupsPrefix, "oidc-groups-prefix", "", "As kube-apiserver's --oidc-groups-prefix")
	own.StringToStringVar(&o.RequiredClaims, "oidc-required-claim", nil, "As kube-apiserver's --oidc-required-claim: "+
		"key=value a token must carry; repeatable")
	own.StringSliceVar(&o.SigningAlgs, "oidc-signing-algs", nil, "As kube-apiserver's --oidc-signing-algs (default "+
		"RS256)")
	own.VisitAll(func(fl *pflag.Flag) { o.names = append(o.names, fl.Name); f.AddFlag(fl) })
	o.flags = f
	settings.AliasFlag(f, "oidc-ca-file", "oidc-certificate-authority", warn)
	for alias, canonical := range aliases {
		settings.AliasFlag(f, alias, canonical, warn)
	}
}

// Given lists the flags given, as "--name".
func (o *OIDCFlags) Given() []string {
	var given []string
	for _, n := range o.names {
		if o.flags != nil && o.flags.Changed(n) {
			given = append(given, "--"+n)
		}
	}
	return given
}

// Values is the flags with the CA file read.
func (o *OIDCFlags) Values() (oidcflags.Legacy, error) {
	l := o.Legacy
	if o.CAFile != "" {
		b, err := os.ReadFile(o.CAFile)
		if err != nil {
			return l, fmt.Errorf("reading --oidc-certificate-authority: %w", err)
		}
		l.CA = b
	}
	return l, nil
}
