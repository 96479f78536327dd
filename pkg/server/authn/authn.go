// Package authn authenticates bearer tokens exactly as kube-apiserver does.
// It owns what the impersonating proxy and the "claims" prediction share:
//
//   - the AuthenticationConfiguration (apiserver.config.k8s.io/v1 and
//     v1beta1), decoded strictly and defaulted through k8s.io/apiserver's own
//     scheme and validated with its own validation package, as
//     kube-apiserver loads --authentication-config;
//   - kube-apiserver's legacy --oidc-* flags, converted into a jwt
//     authenticator the way kube-apiserver converts them
//     (k8s.io/kubernetes pkg/kubeapiserver/options/authentication.go);
//   - the JWT authenticator itself, k8s.io/apiserver's
//     plugin/pkg/authenticator/token/oidc: signature via the issuer's JWKS
//     (or static keys), iss, aud with audienceMatchPolicy, exp and nbf,
//     claim validation rules, username/groups/uid/extra mappings (claims or
//     CEL) and user validation rules, one per jwt entry, tried as a union
//     that fails on the first error, as kube-apiserver does.
//
// pkg/idp/jwtclaims decodes a JWT without verifying it, for display.
//
// Nothing here is re-implemented: a difference between this package and
// kube-apiserver is a difference in how the authenticator is configured.
package authn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/apis/apiserver/install"
	apiservervalidation "k8s.io/apiserver/pkg/apis/apiserver/validation"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	authenticationcel "k8s.io/apiserver/pkg/authentication/cel"
	tokenunion "k8s.io/apiserver/pkg/authentication/token/union"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/plugin/pkg/authenticator/token/oidc"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/httpguard"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/authn/oidcflags"
)

// Config is kube-apiserver's internal AuthenticationConfiguration type.
type Config = apiserver.AuthenticationConfiguration

var (
	// codecs decode configurations strictly, as kube-apiserver does; built
	// on first use, not at start-up (the full binary also runs get-token).
	codecs = sync.OnceValue(func() serializer.CodecFactory {
		s := runtime.NewScheme()
		install.Install(s)
		return serializer.NewCodecFactory(s, serializer.EnableStrict)
	})
	// compiler is the API server's CEL compiler for claims and user
	// expressions; building its environment costs milliseconds, so one is
	// shared per process (kube-apiserver shares one too).
	compiler = sync.OnceValue(authenticationcel.NewDefaultCompiler)
)

// LoadConfig decodes an AuthenticationConfiguration (YAML or JSON,
// apiserver.config.k8s.io/v1 or v1beta1) strictly, defaults it and
// validates it, exactly as kube-apiserver loads --authentication-config: a
// file it would refuse to start with is an error here.
func LoadConfig(data []byte) (*Config, error) {
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, errors.New("the AuthenticationConfiguration is empty")
	}
	obj, err := runtime.Decode(codecs().UniversalDecoder(), data)
	if err != nil {
		return nil,
			fmt.Errorf("decoding the AuthenticationConfiguration (apiserver.config.k8s.io/v1 or v1beta1): %w", err)
	}
	cfg, ok := obj.(*Config)
	if !ok || cfg == nil {
		return nil, fmt.Errorf("expected an AuthenticationConfiguration, got %T", obj)
	}
	if err := Validate(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// maxConfigSize bounds an AuthenticationConfiguration file: a few
// issuers take kilobytes; /dev/zero or a huge file is a mistake.
const maxConfigSize = 1 << 20

// LoadConfigFile reads and loads an AuthenticationConfiguration file: a
// regular file (not a FIFO or device, which could block or never end) of
// at most 1 MiB.
func LoadConfigFile(path string) (*Config, error) {
	// Stat before opening: opening a FIFO for reading blocks.
	if fi, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("reading the AuthenticationConfiguration: %w", err)
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("the AuthenticationConfiguration %s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the AuthenticationConfiguration: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfigSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading the AuthenticationConfiguration: %w", err)
	}
	if len(b) > maxConfigSize {
		return nil, fmt.Errorf("the AuthenticationConfiguration %s is larger than 1 MiB", path)
	}
	cfg, err := LoadConfig(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// Validate runs kube-apiserver's validation of an AuthenticationConfiguration
// (the https issuer rule, audiences and their match policy, CEL compiles and
// types, claims and prefixes, extra keys ...).
func Validate(cfg *Config) error {
	if errs := apiservervalidation.ValidateAuthenticationConfiguration(compiler(), cfg, nil); len(errs) > 0 {
		return fmt.Errorf("kube-apiserver would refuse this AuthenticationConfiguration: %w", errs.ToAggregate())
	}
	return nil
}

// LegacyFlags are kube-apiserver's --oidc-* flags (pkg/server/authn/oidcflags, so
// that commands bind them without linking the authenticator).
type LegacyFlags = oidcflags.Legacy

// LegacyConfig converts the flags as kube-apiserver does: the result is the
// single jwt authenticator the API server would run, and the signing
// algorithms it would accept.
func LegacyConfig(f LegacyFlags) (*Config, []string) {
	claim := f.UsernameClaim
	if claim == "" {
		claim = "sub"
	}
	prefix := f.UsernamePrefix
	if prefix == "" && claim != "email" {
		prefix = f.IssuerURL + "#"
	}
	if prefix == "-" {
		prefix = ""
	}
	j := apiserver.JWTAuthenticator{
		Issuer: apiserver.Issuer{URL: f.IssuerURL, Audiences: f.ClientIDs, CertificateAuthority: string(f.CA)},
		ClaimMappings: apiserver.ClaimMappings{
			Username: apiserver.PrefixedClaimOrExpression{Claim: claim, Prefix: ptr.To(prefix)},
		},
	}
	if len(f.ClientIDs) > 1 {
		j.Issuer.AudienceMatchPolicy = apiserver.AudienceMatchPolicyMatchAny
	}
	if f.GroupsClaim != "" {
		j.ClaimMappings.Groups = apiserver.PrefixedClaimOrExpression{Claim: f.GroupsClaim,
			Prefix: ptr.To(f.GroupsPrefix)}
	}
	for c, v := range f.RequiredClaims {
		j.ClaimValidationRules = append(j.ClaimValidationRules,
			apiserver.ClaimValidationRule{Claim: c, RequiredValue: v})
	}
	algs := f.SigningAlgs
	if len(algs) == 0 {
		algs = []string{"RS256"}
	}
	return &Config{JWT: []apiserver.JWTAuthenticator{j}}, algs
}

// Keys replaces the issuers' JWKS discovery.
type Keys int

const (
	// KeysDiscovered fetches each issuer's discovery document and JWKS, as
	// kube-apiserver does.
	KeysDiscovered Keys = iota
	// KeysStatic verifies with Options.StaticKeys (a JWKS or PEM public
	// keys), for platforms that publish keys but no discovery document.
	KeysStatic
	// KeysUnverified checks no signature: every other check and the whole
	// mapping still run. Only for predictions that say so (claims without a
	// trusted issuer); never for the proxy.
	KeysUnverified
)

// Options build an Authenticator.
type Options struct {
	Config *Config
	// SigningAlgs: empty means every algorithm kube-apiserver accepts with
	// an AuthenticationConfiguration; legacy flags pass their own.
	SigningAlgs []string
	Keys        Keys
	// StaticKeys is the content of a JWKS or PEM file, with KeysStatic.
	StaticKeys []byte
	// Client makes the requests to the issuers; nil builds one per issuer
	// from its certificateAuthority, as kube-apiserver does.
	Client *http.Client
}

// Authenticator is kube-apiserver's JWT authentication for one configuration.
type Authenticator struct {
	union  authenticator.Token
	checks []func() error
	cancel context.CancelFunc
}

// New builds the authenticators of opts.Config. Discovery runs in the
// background (as in kube-apiserver): HealthCheck says when every issuer
// is ready, WaitReady waits for it. Close stops the background work.
func New(ctx context.Context, opts Options) (*Authenticator, error) {
	if opts.Config == nil || len(opts.Config.JWT) == 0 {
		return nil, errors.New("no jwt authenticator is configured: give an issuer or an AuthenticationConfiguration " +
			"with jwt entries")
	}
	if err := Validate(opts.Config); err != nil {
		return nil, err
	}
	algs := opts.SigningAlgs
	if len(algs) == 0 {
		algs = oidc.AllValidSigningAlgorithms()
	}
	var keySet keySet
	switch opts.Keys {
	case KeysStatic:
		// One file of keys for several issuers would let the holder of one
		// issuer's key sign tokens for the others.
		if len(opts.Config.JWT) > 1 {
			return nil, fmt.Errorf("static signing keys serve one issuer, the configuration has %d: give each "+
				"issuer's keys through its discovery document, or configure one issuer", len(opts.Config.JWT))
		}
		ks, err := parseStaticKeys(opts.StaticKeys)
		if err != nil {
			return nil, err
		}
		keySet = ks
	case KeysUnverified:
		keySet = unverifiedKeySet{}
	}
	ctx, cancel := context.WithCancel(ctx)
	a := &Authenticator{cancel: cancel}
	var tokens []authenticator.Token
	for _, j := range opts.Config.JWT {
		o := oidc.Options{JWTAuthenticator: j, SupportedSigningAlgs: algs, Compiler: compiler(), Client: opts.Client}
		if keySet != nil {
			if j.Issuer.DiscoveryURL != "" {
				cancel()
				return nil,
					fmt.Errorf("issuer %q: discoveryURL and static or unverified keys exclude each other", j.Issuer.URL)
			}
			o.KeySet = keySet
		}
		switch {
		case opts.Keys == KeysUnverified:
			// kube-apiserver fetches the distributed claims a token names
			// (_claim_sources): never for a token whose signature no one
			// checked, whose author would choose the URL and the bearer.
			o.Client = httpguard.NoNetwork()
		case o.Client == nil:
			c, err := issuerClient(j.Issuer.CertificateAuthority)
			if err != nil {
				cancel()
				return nil, fmt.Errorf("issuer %q: %w", j.Issuer.URL, err)
			}
			o.Client = c
		}
		t, err := oidc.New(ctx, o)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("issuer %q: %w", j.Issuer.URL, err)
		}
		tokens = append(tokens, t)
		a.checks = append(a.checks, t.HealthCheck)
	}
	a.union = tokenunion.NewFailOnError(tokens...)
	return a, nil
}

// KeyRefetchInterval is how often at most an issuer's discovery document
// and JWKS are fetched again: go-oidc refetches the JWKS for every token
// whose key ID it does not know, so without it each request with a forged
// kid would cost a request to the issuer.
const KeyRefetchInterval = 10 * time.Second

// issuerClient is the client kube-apiserver builds for an issuer (its CA,
// else the host's roots; 30 s per request), with every answer bounded and
// anonymous refetches rate-limited (pkg/idp/httpguard).
func issuerClient(ca string) (*http.Client, error) {
	var roots *x509.CertPool
	if ca != "" {
		p, err := certutil.NewPoolFromBytes([]byte(ca))
		if err != nil {
			return nil, fmt.Errorf("reading the certificateAuthority: %w", err)
		}
		roots = p
	}
	tr := utilnet.SetTransportDefaults(&http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}})
	return &http.Client{Transport: httpguard.RateLimited(httpguard.Bounded(tr), KeyRefetchInterval),
		Timeout: 30 * time.Second}, nil
}

// Close stops the background discovery and key refreshes.
func (a *Authenticator) Close() { a.cancel() }

// HealthCheck is nil once every issuer's discovery and keys are loaded.
func (a *Authenticator) HealthCheck() error {
	var errs []error
	for _, c := range a.checks {
		if err := c(); err != nil {
			errs = append(errs, err)
		}
	}
	return utilerrors.NewAggregate(errs)
}

// WaitReady waits until HealthCheck passes or ctx ends, and returns the
// last health error then.
func (a *Authenticator) WaitReady(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		err := a.HealthCheck()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the issuer is not ready: %w", err)
		case <-t.C:
		}
	}
}

// ErrNoAuthenticator means no jwt authenticator's issuer matches the
// token's (kube-apiserver then tries its other authenticators and answers
// 401 when none accepts).
var ErrNoAuthenticator = errors.New("no jwt authenticator accepts the token's issuer")

// AuthenticateToken is kube-apiserver's authenticator.Token: the user of
// token, false when no authenticator accepts it (the proxy builds
// k8s.io/apiserver's request authenticators and token cache on it).
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	return a.union.AuthenticateToken(ctx, token)
}

// Authenticate returns the user kube-apiserver would see for token (before
// it adds system:authenticated), or why it would refuse the token.
func (a *Authenticator) Authenticate(ctx context.Context, token string) (user.Info, error) {
	resp, ok, err := a.union.AuthenticateToken(ctx, token)
	switch {
	case err != nil:
		return nil, err
	case !ok || resp == nil || resp.User == nil:
		return nil, ErrNoAuthenticator
	}
	return resp.User, nil
}
