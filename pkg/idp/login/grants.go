package login

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/int128/oauth2cli"
	"golang.org/x/oauth2"
	"golang.org/x/term"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/oauth"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/oidc"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/credspec"
)

func randomString() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating a random value: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// authRequest holds the per-login secrets of an authorization request:
// state (CSRF), nonce (ID token replay) and the PKCE verifier ("" without
// PKCE), and the user's extra parameters.
type authRequest struct {
	state, nonce, verifier string
	extra                  map[string]string
}

func (c *Client) newAuthRequest(p *oidc.Provider) (*authRequest, error) {
	state, err := randomString()
	if err != nil {
		return nil, err
	}
	nonce, err := randomString()
	if err != nil {
		return nil, err
	}
	r := &authRequest{state: state, nonce: nonce, extra: c.cfg.AuthRequestExtraParams}
	if usePKCE(c.cfg.PKCEMethod, p.PKCEMethods) {
		r.verifier = oauth2.GenerateVerifier()
	} else if c.cfg.PKCEMethod != credspec.PKCENo {
		fmt.Fprintf(c.cfg.Stderr, "Note: the provider's discovery document lists PKCE methods %s without S256: "+
			"logging in without PKCE (--oidc-pkce-method=S256 forces it).\n",
			logging.OneLine(fmt.Sprint(p.PKCEMethods), 200))
	}
	return r, nil
}

// usePKCE decides --oidc-pkce-method: S256 always, no never, auto unless
// the discovery document lists methods and S256 is not one of them (a
// provider that lists none is sent S256: one that does not know PKCE
// ignores it).
func usePKCE(method string, supported []string) bool {
	switch method {
	case credspec.PKCENo:
		return false
	case credspec.PKCES256:
		return true
	}
	return len(supported) == 0 || slices.Contains(supported, "S256")
}

// options are the authorization request parameters: the extra ones, PKCE
// S256 and nonce (the login's own win: Validate refuses extras that name
// them).
func (a *authRequest) options() []oauth2.AuthCodeOption {
	var opts []oauth2.AuthCodeOption
	for k, v := range a.extra {
		opts = append(opts, oauth2.SetAuthURLParam(k, v))
	}
	if a.verifier != "" {
		opts = append(opts, oauth2.S256ChallengeOption(a.verifier))
	}
	return append(opts, oauth2.SetAuthURLParam("nonce", a.nonce))
}

// tokenOptions go with the code exchange: the PKCE verifier.
func (a *authRequest) tokenOptions() []oauth2.AuthCodeOption {
	if a.verifier == "" {
		return nil
	}
	return []oauth2.AuthCodeOption{oauth2.VerifierOption(a.verifier)}
}

// authCode runs the browser flow: a loopback server on the first free
// listen address, PKCE S256, state (checked by oauth2cli) and nonce.
func (c *Client) authCode(ctx context.Context, p *oidc.Provider) (*oauth2.Token, string, error) {
	if err := checkAuthEndpoint(p); err != nil {
		return nil, "", err
	}
	req, err := c.newAuthRequest(p)
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(c.ctx(ctx), c.cfg.AuthTimeout)
	defer cancel()
	ctx, abort := context.WithCancelCause(ctx)
	defer abort(nil)

	conf := c.oauth2Config(p)
	listen, callbackPath, err := c.loopback(conf)
	if err != nil {
		return nil, "", err
	}
	// The authorization URL, for the redirect URL oauth2cli gives its
	// loopback server (http://localhost:PORT): printed and opened directly,
	// since the server has no index page that would hand it out.
	authURL := func(localURL string) string {
		cc := *conf
		if cc.RedirectURL == "" {
			cc.RedirectURL = strings.TrimSuffix(localURL, "/")
		}
		return cc.AuthCodeURL(req.state, req.options()...)
	}
	ready, stopPrompt := c.promptWhenReady(ctx, abort, conf, authURL)
	defer stopPrompt()

	tok, err := oauth2cli.GetToken(ctx, oauth2cli.Config{
		OAuth2Config:            *conf,
		State:                   req.state,
		AuthCodeOptions:         req.options(),
		TokenRequestOptions:     req.tokenOptions(),
		LocalServerBindAddress:  listen,
		LocalServerCallbackPath: callbackPath,
		LocalServerCertFile:     c.cfg.LocalServerCert,
		LocalServerKeyFile:      c.cfg.LocalServerKey,
		LocalServerReadyChan:    ready,
		LocalServerSuccessHTML:  successHTML,
		LocalServerMiddleware:   callbackOnly(req.state),
		// oauth2cli takes both or neither: the page follows the login,
		// whatever its outcome (the terminal says which).
		SuccessRedirectURL: c.cfg.OpenURLAfterAuthentication,
		FailureRedirectURL: c.cfg.OpenURLAfterAuthentication,
		Logf: func(format string, args ...any) {
			c.cfg.Log.Printf(2, format, args...)
		},
	})
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) &&
		!errors.Is(cause, context.DeadlineExceeded) {
		return nil, "", cause
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, "",
			fmt.Errorf("no browser login within %s: open the URL above, or raise --authentication-timeout",
				c.cfg.AuthTimeout)
	}
	if err != nil {
		return nil, "", fmt.Errorf("browser login: %w", c.providerError(p, err))
	}
	return tok, req.nonce, nil
}

// promptWhenReady shows the authorization URL (and opens the browser)
// once oauth2cli's loopback server says on ready that it listens, after
// holding the other loopback address (a failure to hold it aborts the
// login); stop ends the prompt and releases what it held.
func (c *Client) promptWhenReady(ctx context.Context, abort context.CancelCauseFunc, conf *oauth2.Config,
	authURL func(string) string) (ready chan string, stop func()) {
	ready = make(chan string, 1)
	done := make(chan struct{})
	held := make(chan func(), 1)
	prompted := make(chan struct{})
	hold := func(localURL string) error {
		redirect := conf.RedirectURL
		if redirect == "" {
			redirect = localURL
		}
		stop, err := holdIPv6Loopback(redirect)
		if err != nil {
			abort(err)
			return err
		}
		held <- stop
		return nil
	}
	go func() {
		defer close(prompted)
		c.promptBrowser(ctx, ready, done, hold, authURL)
	}()
	return ready, func() {
		close(done)
		<-prompted // promptBrowser has returned, having sent at most one stop
		select {
		case stop := <-held:
			stop()
		default:
		}
	}
}

// loopback is where the browser login's loopback server listens, and its
// callback path: the redirect the provider has registered (kubelogin's
// --oidc-redirect-url, which conf then names) on its port, else the listen
// addresses. It binds 127.0.0.1, whatever loopback name an address gives,
// and holds [::1] on the same port (holdIPv6Loopback): the redirect's
// localhost then reaches this login on either address.
func (c *Client) loopback(conf *oauth2.Config) (listen []string, callbackPath string, err error) {
	listen = c.cfg.ListenAddresses
	if c.cfg.RedirectURL != "" {
		u, err := url.Parse(c.cfg.RedirectURL)
		if err != nil {
			return nil, "", fmt.Errorf("--oidc-redirect-url: %w", err)
		}
		conf.RedirectURL = c.cfg.RedirectURL
		listen, callbackPath = []string{net.JoinHostPort("127.0.0.1", u.Port())}, u.Path
	}
	listen = slices.Clone(listen)
	for i, a := range listen {
		if _, port, err := net.SplitHostPort(a); err == nil {
			listen[i] = net.JoinHostPort("127.0.0.1", port)
		}
	}
	return listen, callbackPath, nil
}

const successHTML = `<!DOCTYPE html><html lang="en"><head><meta charset="UTF-8"><title>Logged in</title></head>
<body style="font-family:sans-serif;margin:2em"><h1>Logged in</h1><p>kubectl-impersonate has your token. You can close this window.</p>
<script>window.close()</script></body></html>`

func (c *Client) open(url string) error {
	if c.cfg.OpenURL != nil {
		return c.cfg.OpenURL(url)
	}
	return openBrowser(c.cfg.BrowserCommand, url, c.cfg.Stderr)
}

// callbackOnly lets only this login's callback reach oauth2cli's loopback
// server. Its index page would redirect any local user to the
// authorization URL with this login's state and PKCE challenge, letting
// them finish the login with their own account; and a callback with
// another state (a code or an error) would end this login. Both are
// refused without ending it.
func callbackOnly(state string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			if r.Method != http.MethodGet || (q.Get("code") == "" && q.Get("error") == "") {
				http.NotFound(w, r)
				return
			}
			if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(state)) != 1 {
				http.Error(w, "this answer is not for the login in progress (state does not match)",
					http.StatusBadRequest)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// promptBrowser shows the authorization URL, opens the browser, and
// counts down.
func (c *Client) promptBrowser(ctx context.Context, ready <-chan string, done <-chan struct{},
	hold func(localURL string) error, authURL func(localURL string) string) {
	var localURL string
	select {
	case localURL = <-ready:
	case <-ctx.Done():
		return
	case <-done:
		return
	}
	if hold(localURL) != nil {
		return
	}
	deadline, _ := ctx.Deadline()
	u := authURL(localURL)
	fmt.Fprintf(c.cfg.Stderr, "Open %s in your browser to log in (waiting %s).\n", u,
		c.cfg.AuthTimeout.Round(time.Second))
	if !c.cfg.SkipOpenBrowser {
		if err := c.open(u); err != nil {
			fmt.Fprintf(c.cfg.Stderr, "Could not open a browser (%v); open the URL yourself.\n", err)
		}
	}
	if !c.cfg.StderrIsTerminal {
		return
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	defer logging.StatusLine(c.cfg.Stderr, "")
	for {
		select {
		case <-tick.C:
			logging.StatusLine(c.cfg.Stderr,
				fmt.Sprintf("Waiting for the browser login: %s left", time.Until(deadline).Round(time.Second)))
		case <-ctx.Done():
			return
		case <-done:
			return
		}
	}
}

// authCodeKeyboard prints the authorization URL and reads the code (or the
// whole redirect URL, whose state is then checked) from the terminal.
func (c *Client) authCodeKeyboard(ctx context.Context, p *oidc.Provider) (*oauth2.Token, string, error) {
	if c.cfg.Stdin == nil {
		return nil, "", ErrInteractionRequired
	}
	if err := checkAuthEndpoint(p); err != nil {
		return nil, "", err
	}
	req, err := c.newAuthRequest(p)
	if err != nil {
		return nil, "", err
	}
	conf := c.oauth2Config(p)
	conf.RedirectURL = c.cfg.RedirectURL
	if conf.RedirectURL == "" {
		conf.RedirectURL = credspec.OOBRedirectURL
	}
	authURL := conf.AuthCodeURL(req.state, req.options()...)
	fmt.Fprintf(c.cfg.Stderr, "Open this URL in a browser, log in, then paste the code (or the whole address you "+
		"were sent to):\n\n%s\n\nCode: ", authURL)

	ctx, cancel := context.WithTimeout(c.ctx(ctx), c.cfg.AuthTimeout)
	defer cancel()
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(c.cfg.Stdin).ReadString('\n')
		lines <- strings.TrimSpace(line)
	}()
	var input string
	select {
	case input = <-lines:
	case <-ctx.Done():
		return nil, "", fmt.Errorf("no code entered within %s", c.cfg.AuthTimeout)
	}
	code, err := codeFromInput(input, req.state)
	if err != nil {
		return nil, "", err
	}
	tok, err := conf.Exchange(ctx, code, req.tokenOptions()...)
	if err != nil {
		return nil, "", fmt.Errorf("exchanging the code: %w", c.providerError(p, err))
	}
	return tok, req.nonce, nil
}

// codeFromInput accepts a bare code or a redirect URL carrying code and state.
func codeFromInput(input, state string) (string, error) {
	if input == "" {
		return "", errors.New("no code entered")
	}
	if u, err := url.Parse(input); err == nil && u.Scheme != "" && u.RawQuery != "" {
		q := u.Query()
		if e := q.Get("error"); e != "" {
			return "", fmt.Errorf("the provider refused the login: %s %s", e, q.Get("error_description"))
		}
		if q.Get("state") != state {
			return "", errors.New("the pasted address carries another login's state: paste the address of this login")
		}
		if q.Get("code") == "" {
			return "", errors.New("the pasted address carries no code")
		}
		return q.Get("code"), nil
	}
	return input, nil
}

// deviceCode runs RFC 8628: show the user code and verification URI, then poll.
func (c *Client) deviceCode(ctx context.Context, p *oidc.Provider) (*oauth2.Token, error) {
	if p.Endpoint.DeviceAuthURL == "" {
		return nil,
			fmt.Errorf("the provider %s advertises no device_authorization_endpoint: use another --grant-type",
				c.cfg.IssuerURL)
	}
	ctx = c.ctx(ctx)
	conf := c.oauth2Config(p)
	var opts []oauth2.AuthCodeOption
	if c.cfg.ClientSecret != "" {
		// RFC 8628 §3.1: a confidential client authenticates here too.
		// x/oauth2 sends no client authentication to this endpoint, so the
		// secret goes in the body (client_secret_post), where Dex reads it.
		opts = append(opts, oauth2.SetAuthURLParam("client_secret", c.cfg.ClientSecret))
	}
	da, err := conf.DeviceAuth(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("starting the device login: %w", c.providerError(p, err))
	}
	// The provider's answer decides what is shown and opened: only an
	// https page (http on loopback, for test providers), never another
	// scheme an opener would run (file:, javascript:, a custom handler).
	for _, u := range []string{da.VerificationURI, da.VerificationURIComplete} {
		if u != "" && !printableWebURL(u) {
			return nil, fmt.Errorf("the provider's device verification URL %s is not an https URL: refusing to show "+
				"or open it", strconv.Quote(u))
		}
	}
	if da.VerificationURI == "" || strings.ContainsFunc(da.UserCode, func(r rune) bool { return !strconv.IsPrint(r) }) {
		return nil, errors.New("the provider's device authorization answer has no verification URL or an unprintable " +
			"user code")
	}
	target := da.VerificationURIComplete
	if target == "" {
		target = da.VerificationURI
	}
	fmt.Fprintf(c.cfg.Stderr, "Open %s and enter the code %s to log in (waiting %s).\n", da.VerificationURI,
		da.UserCode, c.cfg.AuthTimeout)
	if target != da.VerificationURI {
		fmt.Fprintf(c.cfg.Stderr, "Or open %s\n", target)
	}
	// No browser where none can be shown: xdg-open would only print its
	// failures under the prompt.
	if noBrowser, _ := c.headless(); !c.cfg.SkipOpenBrowser && !noBrowser {
		if err := c.open(target); err != nil {
			c.cfg.Log.Printf(1, "could not open a browser: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.AuthTimeout)
	defer cancel()
	tok, err := conf.DeviceAccessToken(ctx, da)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("device login not completed within %s", c.cfg.AuthTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("device login: %w", c.providerError(p, err))
	}
	return tok, nil
}

func (c *Client) clientCredentials(ctx context.Context, p *oidc.Provider) (*oauth2.Token, error) {
	c.cfg.Log.Printf(1, "requesting a client-credentials token at %s", p.Endpoint.TokenURL)
	tok, err := c.tokenRequest(ctx, p, url.Values{"grant_type": {"client_credentials"}})
	if err != nil {
		return nil, fmt.Errorf("client credentials grant: %w", err)
	}
	return tok, nil
}

// passwordGrant is the resource owner password grant (RFC 6749 §4.3): the
// password from the settings, else asked on the terminal without echo.
func (c *Client) passwordGrant(ctx context.Context, p *oidc.Provider) (*oauth2.Token, error) {
	password := c.cfg.Password
	if password == "" {
		f, ok := c.cfg.Stdin.(*os.File)
		if !ok || !term.IsTerminal(int(f.Fd())) {
			return nil, fmt.Errorf("the password grant needs a password: --password-file or $%s (or a terminal to "+
				"type it)", credspec.EnvPassword)
		}
		fmt.Fprintf(c.cfg.Stderr, "Password for %s: ", logging.Printable(c.cfg.Username))
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(c.cfg.Stderr)
		if err != nil {
			return nil, fmt.Errorf("reading the password: %w", err)
		}
		password = string(b)
	}
	c.cfg.Log.Printf(1, "requesting a token with the password grant at %s", p.Endpoint.TokenURL)
	tok, err := c.tokenRequest(ctx, p,
		url.Values{"grant_type": {"password"}, "username": {c.cfg.Username}, "password": {password}})
	if err != nil {
		return nil, fmt.Errorf("password grant: %w", err)
	}
	return tok, nil
}

// tokenRequest runs a grant at the token endpoint through the one token
// client (pkg/idp/oauth): the client's authentication, the scopes (refresh
// sends them too, which x/oauth2's own refresh omits), retries of transient
// failures.
func (c *Client) tokenRequest(ctx context.Context, p *oidc.Provider, params url.Values) (*oauth2.Token, error) {
	if params.Get("scope") == "" {
		params.Set("scope", strings.Join(c.Scopes(), " "))
	}
	tc := &oauth.Client{HTTPClient: c.cfg.HTTPClient, TokenURL: p.Endpoint.TokenURL, ClientID: c.cfg.ClientID,
		ClientSecret: c.cfg.ClientSecret, AuthMethod: c.authMethod(p), Assertion: c.cfg.Assertion}
	return tc.Token(ctx, params, "")
}

// authMethod is how the client authenticates at p's token and revocation
// endpoints: the discovery document's choice, unless the flag says.
func (c *Client) authMethod(p *oidc.Provider) string {
	switch c.endpoint(p).AuthStyle {
	case oauth2.AuthStyleInHeader:
		return oauth.AuthBasic
	case oauth2.AuthStyleInParams:
		return oauth.AuthPost
	}
	return c.cfg.ClientAuthMethod
}

// providerError is err of x/oauth2's own requests (code exchange, device
// flow) as the one token client describes them.
func (c *Client) providerError(p *oidc.Provider, err error) error {
	return oauth.Classify(oauth.PeerIdP, p.Endpoint.TokenURL, err)
}

// checkAuthEndpoint refuses an authorization endpoint (the discovery
// document's) that is not a web page: it is printed on the terminal and
// opened with the browser command, so no file: or custom scheme, no
// terminal escape sequence.
func checkAuthEndpoint(p *oidc.Provider) error {
	if !printableWebURL(p.Endpoint.AuthURL) {
		return fmt.Errorf("the provider's authorization endpoint %s is not an https URL: refusing to show or open it",
			strconv.Quote(p.Endpoint.AuthURL))
	}
	return nil
}

// printableWebURL is webURL without characters a terminal would act on
// (C0 and C1 controls, which url.Parse lets through in part).
func printableWebURL(raw string) bool {
	return webURL(raw) && !strings.ContainsFunc(raw, func(r rune) bool { return !strconv.IsPrint(r) })
}

// webURL accepts https URLs, and http ones on a loopback host.
func webURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil {
		return false
	}
	return u.Scheme == "https" || (u.Scheme == "http" && credspec.IsLoopbackHost(u.Hostname()))
}
