package cmd

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/exchange"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/execcred"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/login"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/settings"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/tokencache"
)

// GetTokenOptions is the credential plugin command.
type GetTokenOptions struct {
	Auth *settings.AuthOptions
	genericiooptions.IOStreams
	global *GlobalOptions

	request     *execcred.Request
	interactive bool
}

// NewCmdGetToken builds get-token.
func NewCmdGetToken(g *GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &GetTokenOptions{Auth: settings.NewAuthOptions(), IOStreams: streams, global: g}
	cmd := &cobra.Command{
		Use:   "get-token",
		Short: "Print an ExecCredential for kubectl (run by kubectl from a kubeconfig exec entry)",
		Long: `get-token is what kubectl runs for every command: it prints an ExecCredential
(client.authentication.k8s.io/v1 or v1beta1, as kubectl asks in
KUBERNETES_EXEC_INFO) holding a cached token, and logs in only when the cached
token has expired and cannot be refreshed. Write its kubeconfig entry with
"kubectl impersonate setup".`,
		Example: `  # What kubectl runs (see the kubeconfig written by setup):
  kubectl-impersonate get-token --oidc-issuer-url=https://dex.example.com --oidc-client-id=kubernetes`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	o.Auth.AddFlags(cmd.Flags())
	return cmd
}

// Complete reads KUBERNETES_EXEC_INFO and the settings.
func (o *GetTokenOptions) Complete() error {
	req, err := execcred.ParseRequest(o.global.Getenv(execcred.EnvExecInfo))
	if err != nil {
		return err
	}
	o.request = req
	if req.FromKubectl {
		o.interactive = req.Interactive
	} else {
		o.interactive = o.global.IsTerminal(o.In)
	}
	return o.Auth.Complete(o.global.Getenv, notifier(o.ErrOut))
}

// Validate checks the settings.
func (o *GetTokenOptions) Validate() error { return o.Auth.Validate() }

// Run prints the ExecCredential.
func (o *GetTokenOptions) Run(ctx context.Context) error {
	if err := o.checkAllowedServer(); err != nil {
		return err
	}
	r, err := obtain(ctx, o.Auth, o.global, o.IOStreams, o.interactive, credential.Options{})
	if err != nil {
		return err
	}
	return execcred.WriteReply(o.Out, o.request, r.Token, r.Expiry)
}

// obtain runs the credential use case with the settings of a command: the
// login, then the exchange when one is configured. Nothing here touches the
// network or the provider's settings until the cache misses.
func obtain(ctx context.Context, a *settings.AuthOptions, g *GlobalOptions, streams genericiooptions.IOStreams, interactive bool, opts credential.Options) (*credential.Result, error) {
	log := g.Logger(streams.ErrOut)
	notify := notifier(streams.ErrOut)
	store, err := a.NewStore(notify)
	if err != nil {
		return nil, err
	}
	newHTTPClient := func() (*http.Client, error) {
		return login.NewHTTPClient(a.CertificateAuthority, a.InsecureSkipTLSVerify, a.RequestTimeout)
	}
	var loginClient *login.Client
	newLogin := func() (*login.Client, error) {
		if loginClient != nil {
			return loginClient, nil
		}
		httpClient, err := newHTTPClient()
		if err != nil {
			return nil, err
		}
		cfg := loginConfig(a)
		cfg.HTTPClient = httpClient
		cfg.Interactive = interactive
		cfg.Stdin = streams.In
		cfg.Stderr = streams.ErrOut
		cfg.StderrIsTerminal = g.IsTerminal(streams.ErrOut)
		cfg.Log = log
		loginClient = login.New(cfg)
		return loginClient, nil
	}
	source := func(key tokencache.Key, useAccessToken bool, auth func() (credential.Authenticator, error)) *credential.Source {
		return &credential.Source{Key: key, Store: store, LockDir: a.TokenCacheDir, UseAccessToken: useAccessToken,
			NewAuthenticator: auth, Notify: notify, Log: log}
	}
	audit := &exchange.Auditor{File: a.AuditLog}
	if g.Verbosity >= 1 {
		audit.W = streams.ErrOut
	}
	base := source(a.BaseKey(), a.UseAccessToken, func() (credential.Authenticator, error) {
		if settings.EffectiveGrant(a.GrantType) != settings.GrantIdentityPlatform {
			return newLogin()
		}
		return newIdentityPlatform(a, g, streams, interactive)
	})

	var src *credential.Source
	switch a.Exchange {
	case settings.ExchangeCloudSigma:
		cs := cloudSigma(a)
		if cs.HTTPClient, err = newHTTPClient(); err != nil {
			return nil, err
		}
		cs.Audit, cs.Store, cs.LockDir, cs.Notify, cs.Log = audit, store, a.TokenCacheDir, notify, log
		src = cs.Source()
	case settings.ExchangeTokenExchange:
		tx := tokenExchange(a)
		base.UseAccessToken = settings.TokenType(a.ExchangeSubject) != settings.TokenType("id_token")
		tx.Base, tx.Audit, tx.Log = base, audit, log
		tx.TokenURL = func(ctx context.Context) (string, error) {
			lc, err := newLogin()
			if err != nil {
				return "", err
			}
			return lc.TokenURL(ctx)
		}
		if tx.HTTPClient, err = newHTTPClient(); err != nil {
			return nil, err
		}
		src = source(a.Key(), true, func() (credential.Authenticator, error) { return tx, nil })
	default:
		src = base
	}
	r, err := src.Get(ctx, opts)
	if errors.Is(err, login.ErrInteractionRequired) {
		return nil, fmt.Errorf("no valid cached token, and the %s login needs a person, but kubectl runs this plugin non-interactively: run '%s' in a terminal first",
			loginConfig(a).EffectiveGrant(), loginCommand(a))
	}
	return r, err
}

func loginCommand(a *settings.AuthOptions) string {
	return strings.Join(append([]string{"kubectl", "impersonate", "login"}, quoteArgs(a.Args())...), " ")
}

// checkAllowedServer applies --allowed-server to the cluster kubectl named.
func (o *GetTokenOptions) checkAllowedServer() error {
	return o.Auth.CheckAllowedServer(o.request.Cluster.Settings())
}

// newIdentityPlatform signs in with Google (the browser flow of the same
// flags, with the Google issuer), then with Identity Platform.
func newIdentityPlatform(a *settings.AuthOptions, g *GlobalOptions, streams genericiooptions.IOStreams, interactive bool) (credential.Authenticator, error) {
	httpClient, err := login.NewHTTPClient(a.CertificateAuthority, a.InsecureSkipTLSVerify, a.RequestTimeout)
	if err != nil {
		return nil, err
	}
	cfg := loginConfig(a)
	cfg.IssuerURL = a.GoogleIssuer
	cfg.GrantType = settings.GrantAuthCode
	cfg.ExtraScopes = append(cfg.ExtraScopes, "email")
	cfg.HTTPClient, cfg.Interactive, cfg.Stdin, cfg.Stderr = httpClient, interactive, streams.In, streams.ErrOut
	cfg.StderrIsTerminal = g.IsTerminal(streams.ErrOut)
	cfg.Log = g.Logger(streams.ErrOut)
	return &login.IdentityPlatform{
		Google: login.New(cfg), Issuer: a.IssuerURL, APIKey: a.IPAPIKey, Tenant: a.IPTenant,
		ToolkitURL: a.IPEndpoint, SecureTokenURL: a.SecureTokenURL, HTTPClient: httpClient, Log: cfg.Log, Emulator: a.IPEmulator,
	}, nil
}
