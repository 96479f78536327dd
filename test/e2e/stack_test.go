//go:build e2e

// Package e2e runs kubectl-impersonate the way users do, against real
// peers only: kube-apiserver and etcd (in two authentication modes: the
// legacy --oidc-* flags and a structured AuthenticationConfiguration; and a
// third API server whose --authorization-config puts a webhook before Node
// and RBAC, as managed clusters do), Dex as
// the OIDC provider, a pinned kubectl, gnome-keyring's Secret Service, and
// headless Chromium driven through Dex's pages. test/e2e/run.sh builds the
// peers and starts the D-Bus session; TestMain starts and stops the rest.
package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"golang.org/x/crypto/bcrypt"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/authzwebhook"
	"github.com/kubectl-impersonate/kubectl-impersonate/internal/doctest"
	"github.com/kubectl-impersonate/kubectl-impersonate/internal/idp"
	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testkit"
)

// Users of the Dex password database.
var users = map[string]struct{ email, password, group string }{
	"alice": {"alice@example.com", "alice-password", "developers"},
	"bob":   {"bob@example.com", "bob-password", "guests"},
}

const (
	publicClient       = "kubectl-public"
	confidentialClient = "kubectl-confidential"
	// idTokenLifetime is short so that a test can outlive a token: the
	// plugin refreshes when less than credential.MinValidity (30 s) is left.
	idTokenLifetime = 50 * time.Second
	// opTokenLifetime is oidc-provider's ID and access token lifetime
	// (renewed in its last third, 10 s).
	opTokenLifetime = 30 * time.Second
	// opClient and opRobot are oidc-provider's clients: the people's public
	// native client and the robot registered without a secret.
	opClient = "kubectl-impersonate"
	opRobot  = "robot"
	// opRobotKeyID is the kid the robot's key is registered with at
	// oidc-provider: its operator's choice, not the key's thumbprint.
	opRobotKeyID = "robot-1"
	adminToken   = "e2e-admin-token"
	// proxyToken is the impersonating proxy's own credential: it may only impersonate.
	proxyToken = "e2e-proxy-token"
)

type stack struct {
	work, logs string
	tools      string // kube-apiserver, kubectl, dex
	ki         string // the plugin under test
	browser    string // test/e2e/browser
	floor      string // test/e2e/floorproxy
	kubectl    string
	caFile     string
	caPEM      []byte
	certFile   string
	keyFile    string
	secretFile string // the confidential client's secret

	issuer string // the proxy's URL of Dex
	proxy  *countingProxy
	// keycloak simulates Keycloak's token exchange (V1), which no real
	// peer here offers; the structured API server trusts it as a second
	// JWT issuer.
	keycloak *idp.Sim
	// google simulates Google Cloud Identity Platform's Identity Toolkit
	// and securetoken issuer; its "Google sign-in" is Dex.
	google *idp.GoogleSim
	// firebase is the Firebase Auth emulator's base URL.
	firebase string
	// op is panva's oidc-provider (test/e2e/node/provider.mjs), the second
	// certified provider, behind its counting proxy (op.url is its issuer);
	// opRobotKey is the key file of its private_key_jwt robot.
	op         *countingProxy
	opRobotKey string
	// nodeDir holds test/e2e/node's scripts and the node_modules run.sh
	// installed (ESM resolves packages from the script's folder).
	nodeDir string
	// webhook is the authorization webhook before RBAC of the "webhook"
	// API server (internal/authzwebhook), a managed cluster's chain.
	webhook    *authzwebhook.Handler
	webhookSrv *http.Server
	// sudoWebhookAddr is where the "webhook" API server asks direct mode's
	// fail-closed authorizer (deploy/sudo/authorization-config.yaml's entry,
	// first in its chain): sudo-controller serves it there in
	// TestSudoDirectFailClosed, and nothing does otherwise.
	sudoWebhookAddr string
	// sudoClientCA is the CA of kube-apiserver's client certificate to
	// that webhook (sudoClientCert, sudoClientKey): sudoWebhookClient.
	sudoClientCA, sudoClientCert, sudoClientKey string
	api                                         map[string]*apiserver

	etcdData string
	// authConfig is the structured API server's AuthenticationConfiguration.
	authConfig string
	// etcdURL, tokens and auditPolicy let a test start another API server.
	etcdURL, tokens, auditPolicy string

	mu    sync.Mutex
	procs []*exec.Cmd
}

type apiserver struct {
	mode           string
	url            string
	usernamePrefix string
	groupPrefix    string
	// auditLog is kube-apiserver's own audit log (JSON lines of
	// audit.k8s.io/v1 Events, level Metadata).
	auditLog string
}

var st *stack

func TestMain(m *testing.M) {
	s, err := startStack()
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting the stack:", err)
	} else {
		st = s
		code = m.Run()
	}
	if s != nil {
		s.stop()
	}
	os.Exit(code)
}

func mustEnv(k string) (string, error) {
	v := os.Getenv(k)
	if v == "" {
		return "", fmt.Errorf("%s is not set: run the end-to-end tests with test/e2e/run.sh (make e2e)", k)
	}
	return v, nil
}

func startStack() (*stack, error) {
	tools, err := mustEnv("KI_E2E_TOOLS")
	if err != nil {
		return nil, err
	}
	logs, err := mustEnv("KI_E2E_LOGS")
	if err != nil {
		return nil, err
	}
	if _, err := mustEnv("DBUS_SESSION_BUS_ADDRESS"); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "ki-e2e-")
	if err != nil {
		return nil, err
	}
	s := &stack{work: work, logs: logs, tools: tools, kubectl: filepath.Join(tools, "kubectl"), api: map[string]*apiserver{}}
	for _, step := range []func() error{s.buildBinaries, s.makeCerts, s.startDex, s.startKeycloakSim, s.startFirebase, s.startOIDCProvider, s.startEtcdAndAPIServers, s.setupRBAC} {
		if err := step(); err != nil {
			return s, err
		}
	}
	return s, nil
}

func (s *stack) buildBinaries() error {
	s.ki = filepath.Join(s.work, "bin", "kubectl-impersonate")
	s.browser = filepath.Join(s.work, "bin", "e2e-browser")
	s.floor = filepath.Join(s.work, "bin", "e2e-floorproxy")
	// The fast get-token binary sits next to the full one, as installed:
	// setup then points the kubeconfig at it.
	// So does kubectl-impersonate-apiserver, which claims and proxy run in.
	fast := filepath.Join(s.work, "bin", "kubectl-impersonate-get_token")
	apiserver := filepath.Join(s.work, "bin", "kubectl-impersonate-apiserver")
	// And kubectl_complete-impersonate, which kubectl's plugin completion
	// finds on PATH (TestCompletionThroughKubectl).
	complete := filepath.Join(s.work, "bin", "kubectl_complete-impersonate")
	for out, pkg := range map[string]string{s.ki: "../../cmd/kubectl-impersonate", fast: "../../cmd/kubectl-impersonate-get_token",
		apiserver: "../../cmd/kubectl-impersonate-apiserver", complete: "../../cmd/kubectl_complete-impersonate", s.browser: "./browser", s.floor: "./floorproxy"} {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building %s: %w", pkg, err)
		}
	}
	return nil
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

// makeCerts creates a CA and one serving certificate for 127.0.0.1 and
// localhost (Dex, the proxy and the API servers), and the service account key.
func (s *stack) makeCerts() error {
	ca, err := newCA("kubectl-impersonate e2e CA")
	if err != nil {
		return err
	}
	der, keyDER, err := ca.issue(&x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
	})
	if err != nil {
		return err
	}
	s.caFile = filepath.Join(s.work, "ca.crt")
	s.certFile = filepath.Join(s.work, "serving.crt")
	s.keyFile = filepath.Join(s.work, "serving.key")
	if err := writePEM(s.caFile, "CERTIFICATE", ca.der); err != nil {
		return err
	}
	s.caPEM, _ = os.ReadFile(s.caFile)
	if err := writePEM(s.certFile, "CERTIFICATE", der); err != nil {
		return err
	}
	if err := writePEM(s.keyFile, "EC PRIVATE KEY", keyDER); err != nil {
		return err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(s.work, "sa.key"), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey)); err != nil {
		return err
	}
	pub, _ := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err := writePEM(filepath.Join(s.work, "sa.pub"), "PUBLIC KEY", pub); err != nil {
		return err
	}
	s.secretFile = filepath.Join(s.work, "confidential.secret")
	return os.WriteFile(s.secretFile, []byte("e2e-confidential-secret\n"), 0o600)
}

// certAuthority is a test CA valid for a day: its certificate and key.
type certAuthority struct {
	cert *x509.Certificate
	der  []byte
	key  *ecdsa.PrivateKey
}

func newCA(name string) (*certAuthority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return &certAuthority{cert: cert, der: der, key: key}, err
}

// issue signs tmpl (valid for a day, for signatures) for a new P-256 key:
// the certificate and the key, DER.
func (ca *certAuthority) issue(tmpl *x509.Certificate) (der, keyDER []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl.NotBefore, tmpl.NotAfter, tmpl.KeyUsage = now.Add(-time.Hour), now.Add(24*time.Hour), x509.KeyUsageDigitalSignature
	if der, err = x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key); err != nil {
		return nil, nil, err
	}
	keyDER, err = x509.MarshalECPrivateKey(key)
	return der, keyDER, err
}

// start runs a process in its own process group, output to logs/name.log.
func (s *stack) start(name string, argv ...string) error {
	_, err := s.startCmd(name, argv...)
	return err
}

// startCmd is start, returning the process.
func (s *stack) startCmd(name string, argv ...string) (*exec.Cmd, error) {
	logf, err := os.Create(filepath.Join(s.logs, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	s.mu.Lock()
	s.procs = append(s.procs, cmd)
	s.mu.Unlock()
	return cmd, nil
}

// stopProcess sends SIGTERM to the process group, then SIGKILL after 10 s,
// and waits.
func stopProcess(p *exec.Cmd) {
	_ = syscall.Kill(-p.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

func (s *stack) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.procs) - 1; i >= 0; i-- {
		stopProcess(s.procs[i])
	}
	if s.proxy != nil {
		s.proxy.srv.Close()
	}
	if s.webhookSrv != nil {
		_ = s.webhookSrv.Close()
	}
	if s.keycloak != nil {
		s.keycloak.Close()
	}
	if s.google != nil {
		s.google.Close()
	}
	_ = os.RemoveAll(s.work)
	if s.etcdData != "" {
		_ = os.RemoveAll(s.etcdData)
	}
}

// waitHTTP polls url until it answers 200, for at most d.
func waitHTTP(url string, header http.Header, d time.Duration, client *http.Client) error {
	deadline := time.Now().Add(d)
	var last string
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready after %s: %s", url, d, last)
}

func (s *stack) tlsClient() *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.caPEM)
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

func (s *stack) startDex() error {
	dexPort, err := testkit.FreePort()
	if err != nil {
		return err
	}
	proxy, err := newCountingProxy(fmt.Sprintf("https://127.0.0.1:%d", dexPort), s.tlsClient().Transport, s.certFile, s.keyFile)
	if err != nil {
		return err
	}
	s.proxy = proxy
	// Dex at the root of its URL: with a path, Dex sends the device flow's
	// browser to /device/callback outside it.
	s.issuer = proxy.url
	var passwords []map[string]any
	for name, u := range users {
		hash, err := bcrypt.GenerateFromPassword([]byte(u.password), 10)
		if err != nil {
			return err
		}
		passwords = append(passwords, map[string]any{
			"email": u.email, "hash": string(hash), "username": name, "userID": name + "-id", "groups": []string{u.group},
		})
	}
	secret, _ := os.ReadFile(s.secretFile)
	cfg := map[string]any{
		"issuer":  s.issuer,
		"storage": map[string]any{"type": "memory"},
		"web":     map[string]any{"https": fmt.Sprintf("127.0.0.1:%d", dexPort), "tlsCert": s.certFile, "tlsKey": s.keyFile},
		"logger":  map[string]any{"level": "debug"},
		"expiry":  map[string]any{"idTokens": idTokenLifetime.String(), "deviceRequests": "5m"},
		// passwordConnector: the password grant (RFC 6749 §4.3) against the
		// password database.
		"oauth2":           map[string]any{"skipApprovalScreen": true, "passwordConnector": "local"},
		"enablePasswordDB": true,
		"staticPasswords":  passwords,
		"staticClients": []map[string]any{
			// No redirect URIs: Dex then accepts any loopback redirect of a public client.
			{"id": publicClient, "name": "kubectl (people)", "public": true},
			{"id": confidentialClient, "name": "kubectl (confidential)", "secret": strings.TrimSpace(string(secret)),
				"redirectURIs": []string{"/device/callback", "http://localhost:8000", "http://localhost:18000"}},
		},
	}
	// The clients docs/dex.md shows: Dex must start with them as written.
	docClients, err := dexDocClients()
	if err != nil {
		return err
	}
	cfg["staticClients"] = append(cfg["staticClients"].([]map[string]any), docClients...)
	b, _ := json.MarshalIndent(cfg, "", "  ")
	path := filepath.Join(s.work, "dex.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return err
	}
	// docs/dex.md's confidential client reads its secret from the environment.
	if err := os.Setenv("KUBECTL_CI_SECRET", "e2e-docs-ci-secret"); err != nil {
		return err
	}
	if err := s.start("dex", filepath.Join(s.tools, "dex"), "serve", path); err != nil {
		return err
	}
	return waitHTTP(s.issuer+"/.well-known/openid-configuration", nil, 30*time.Second, s.tlsClient())
}

// dexDocClients are the staticClients of docs/dex.md's Dex configuration.
func dexDocClients() ([]map[string]any, error) {
	blocks, err := doctest.Blocks("../../docs/dex.md")
	if err != nil {
		return nil, err
	}
	for _, b := range blocks {
		if b.Lang != "yaml" || !strings.Contains(b.Body, "staticClients:") {
			continue
		}
		var doc struct {
			StaticClients []map[string]any `json:"staticClients"`
		}
		if err := yaml.Unmarshal([]byte(b.Body), &doc); err != nil {
			return nil, fmt.Errorf("docs/dex.md's Dex configuration: %w", err)
		}
		return doc.StaticClients, nil
	}
	return nil, errors.New("docs/dex.md shows no Dex configuration with staticClients")
}

func (s *stack) startKeycloakSim() error {
	sim, err := idp.NewSim()
	if err != nil {
		return err
	}
	cert, err := tls.LoadX509KeyPair(s.certFile, s.keyFile)
	if err != nil {
		return err
	}
	sim.V1 = true
	sim.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	sim.StartTLS()
	s.keycloak = sim

	g := idp.NewGoogleSim(s.issuer, confidentialClient)
	g.Roles["alice@example.com"] = []string{"cluster-viewer"}
	g.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	g.StartTLS()
	s.google = g
	return nil
}

// startFirebase runs the Firebase Auth emulator (firebase-tools) for the
// project demo-project, on free ports.
func (s *stack) startFirebase() error {
	bin, err := mustEnv("KI_E2E_FIREBASE")
	if err != nil {
		return err
	}
	var ports [3]int
	for i := range ports {
		if ports[i], err = testkit.FreePort(); err != nil {
			return err
		}
	}
	dir := filepath.Join(s.work, "firebase")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	cfg := fmt.Sprintf(`{"emulators": {"auth": {"host": "127.0.0.1", "port": %d}, "hub": {"host": "127.0.0.1", "port": %d},
  "logging": {"host": "127.0.0.1", "port": %d}, "ui": {"enabled": false}}}`, ports[0], ports[1], ports[2])
	if err := os.WriteFile(filepath.Join(dir, "firebase.json"), []byte(cfg), 0o600); err != nil {
		return err
	}
	if err := s.start("firebase", "sh", "-c", "cd "+dir+" && exec "+bin+" emulators:start --only auth --project demo-project"); err != nil {
		return err
	}
	s.firebase = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	return waitHTTP(s.firebase+"/", nil, 90*time.Second, http.DefaultClient)
}

// startOIDCProvider runs oidc-provider (test/e2e/node/provider.mjs) over
// https with the stack's certificate, behind a counting proxy whose URL is
// its issuer, with the private_key_jwt robot's public key registered.
func (s *stack) startOIDCProvider() error {
	modules, err := mustEnv("KI_E2E_NODE_MODULES")
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	s.opRobotKey = filepath.Join(s.work, "op-robot.key")
	if err := writePEM(s.opRobotKey, "PRIVATE KEY", der); err != nil {
		return err
	}
	// Registered with the kid its operator chose, not the key's
	// thumbprint: the robot says it with --oidc-client-key-id.
	jwk := jose.JSONWebKey{Key: key.Public(), Algorithm: "ES256", Use: "sig", KeyID: opRobotKeyID}
	jwks, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{jwk}})
	// test/e2e/node's scripts beside the installed node_modules.
	dir := filepath.Join(s.work, "node")
	s.nodeDir = dir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	scripts, err := filepath.Glob("node/*.mjs")
	if err != nil {
		return err
	}
	for _, script := range scripts {
		b, err := os.ReadFile(script)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(script)), b, 0o600); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "robot-jwks.json"), jwks, 0o600); err != nil {
		return err
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		return err
	}
	port, err := testkit.FreePort()
	if err != nil {
		return err
	}
	proxy, err := newCountingProxy(fmt.Sprintf("https://127.0.0.1:%d", port), s.tlsClient().Transport, s.certFile, s.keyFile)
	if err != nil {
		return err
	}
	s.op = proxy
	accounts := map[string]any{}
	for _, u := range users {
		accounts[u.email] = map[string]any{"groups": []string{u.group}}
	}
	usersJSON, _ := json.Marshal(accounts)
	cmd := fmt.Sprintf("cd %q && exec env ISSUER=%q PORT=%d TLS_CERT=%q TLS_KEY=%q ROBOT_JWKS=robot-jwks.json USERS=%q TTL=%d node provider.mjs",
		dir, proxy.url, port, s.certFile, s.keyFile, usersJSON, int(opTokenLifetime.Seconds()))
	if err := s.start("oidc-provider", "sh", "-c", cmd); err != nil {
		return err
	}
	return waitHTTP(proxy.url+"/.well-known/openid-configuration", nil, 30*time.Second, s.tlsClient())
}

func (s *stack) startEtcdAndAPIServers() error {
	clientPort, err := testkit.FreePort()
	if err != nil {
		return err
	}
	peerPort, err := testkit.FreePort()
	if err != nil {
		return err
	}
	// /dev/shm and --unsafe-no-fsync keep etcd's writes cheap (the data is thrown away).
	dataDir, err := os.MkdirTemp("/dev/shm", "ki-e2e-etcd-")
	if err != nil {
		dataDir = filepath.Join(s.work, "etcd")
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	if err := s.start("etcd", filepath.Join(s.tools, "etcd"), "--name=e2e", "--data-dir="+dataDir, "--unsafe-no-fsync",
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		fmt.Sprintf("--listen-peer-urls=http://127.0.0.1:%d", peerPort),
		fmt.Sprintf("--initial-advertise-peer-urls=http://127.0.0.1:%d", peerPort),
		fmt.Sprintf("--initial-cluster=e2e=http://127.0.0.1:%d", peerPort)); err != nil {
		return err
	}
	s.etcdData = dataDir
	if err := waitHTTP(etcdURL+"/health", nil, 30*time.Second, http.DefaultClient); err != nil {
		return err
	}
	tokens := filepath.Join(s.work, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(adminToken+",e2e-admin,e2e-admin-uid,system:masters\n"+proxyToken+",e2e-proxy,e2e-proxy-uid\n"), 0o600); err != nil {
		return err
	}
	authConfig := filepath.Join(s.work, "authentication-config.yaml")
	s.authConfig = authConfig
	ac := map[string]any{
		"apiVersion": "apiserver.config.k8s.io/v1",
		"kind":       "AuthenticationConfiguration",
		"jwt": []map[string]any{{
			"issuer": map[string]any{
				"url": s.issuer, "audiences": []string{publicClient, confidentialClient},
				"audienceMatchPolicy": "MatchAny", "certificateAuthority": string(s.caPEM),
			},
			"claimMappings": map[string]any{
				"username": map[string]any{"claim": "email", "prefix": "oidc:"},
				"groups":   map[string]any{"claim": "groups", "prefix": "oidc:"},
			},
		}, {
			"issuer": map[string]any{
				"url": s.keycloak.Issuer(), "audiences": []string{"robot"}, "certificateAuthority": string(s.caPEM),
			},
			"claimMappings": map[string]any{
				"username": map[string]any{"claim": "email", "prefix": "keycloak:"},
			},
		}, {
			"issuer": map[string]any{
				"url": s.google.Issuer(), "audiences": []string{s.google.Project}, "certificateAuthority": string(s.caPEM),
			},
			"claimMappings": map[string]any{
				"username": map[string]any{"claim": "email", "prefix": ""},
				"groups":   map[string]any{"claim": "gcp.iam.roles", "prefix": ""},
			},
		}, {
			// oidc-provider: people by their verified email, its robot by
			// the client_id of its JWT access token.
			"issuer": map[string]any{
				"url": s.op.url, "audiences": []string{opClient, "kubernetes"},
				"audienceMatchPolicy": "MatchAny", "certificateAuthority": string(s.caPEM),
			},
			"claimValidationRules": []map[string]any{{
				"expression": "has(claims.client_id) || claims.email_verified == true", "message": "a person's email must be verified",
			}},
			"claimMappings": map[string]any{
				"username": map[string]any{"expression": "has(claims.client_id) ? 'op-client:' + claims.client_id : 'op:' + claims.email"},
				"groups":   map[string]any{"claim": "groups", "prefix": "op:"},
			},
		}},
	}
	b, _ := json.Marshal(ac)
	if err := os.WriteFile(authConfig, b, 0o600); err != nil {
		return err
	}
	authzConfig, err := s.startAuthorizationWebhook()
	if err != nil {
		return err
	}
	modes := map[string][]string{
		"legacy": {"--oidc-issuer-url=" + s.issuer, "--oidc-client-id=" + publicClient, "--oidc-ca-file=" + s.caFile,
			"--oidc-username-claim=email", "--oidc-groups-claim=groups"},
		"structured": {"--authentication-config=" + authConfig},
		// A managed cluster's chain: a webhook before Node and RBAC
		// (--authorization-config, apiserver.config.k8s.io/v1).
		"webhook": {"--authentication-config=" + authConfig, "--authorization-config=" + authzConfig},
	}
	prefixes := map[string]string{"legacy": "", "structured": "oidc:", "webhook": "oidc:"}
	s.etcdURL, s.tokens = etcdURL, tokens
	s.auditPolicy = filepath.Join(s.work, "audit-policy.yaml")
	if err := os.WriteFile(s.auditPolicy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n"), 0o600); err != nil {
		return err
	}
	for mode, flags := range modes {
		a, _, err := s.startAPIServer(mode, flags)
		if err != nil {
			return err
		}
		a.usernamePrefix, a.groupPrefix = prefixes[mode], prefixes[mode]
		s.api[mode] = a
	}
	for _, a := range s.api {
		if err := waitHTTP(a.url+"/readyz", http.Header{"Authorization": {"Bearer " + adminToken}}, 90*time.Second, s.tlsClient()); err != nil {
			return err
		}
	}
	return nil
}

// startAPIServer starts a kube-apiserver named mode (its etcd prefix, log
// and audit log) with the stack's common flags and these. It does not wait
// for it to be ready.
func (s *stack) startAPIServer(mode string, flags []string) (*apiserver, *exec.Cmd, error) {
	port, err := testkit.FreePort()
	if err != nil {
		return nil, nil, err
	}
	certDir := filepath.Join(s.work, "apiserver-"+mode)
	auditLog := filepath.Join(s.logs, "kube-apiserver-"+mode+"-audit.log")
	argv := append([]string{filepath.Join(s.tools, "kube-apiserver"),
		"--etcd-servers=" + s.etcdURL, "--etcd-prefix=/" + mode,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port),
		"--tls-cert-file=" + s.certFile, "--tls-private-key-file=" + s.keyFile, "--cert-dir=" + certDir,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + filepath.Join(s.work, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(s.work, "sa.key"),
		"--service-cluster-ip-range=10.96.0.0/24",
		"--endpoint-reconciler-type=none",
		"--token-auth-file=" + s.tokens, "--enable-priority-and-fairness=false", "--profiling=false",
		"--audit-policy-file=" + s.auditPolicy, "--audit-log-path=" + auditLog,
		"--audit-log-mode=blocking",
	}, flags...)
	// --authorization-config replaces --authorization-mode (they exclude each other).
	if !slices.ContainsFunc(flags, func(f string) bool { return strings.HasPrefix(f, "--authorization-config=") }) {
		argv = append(argv, "--authorization-mode=Node,RBAC")
	}
	cmd, err := s.startCmd("kube-apiserver-"+mode, argv...)
	if err != nil {
		return nil, nil, err
	}
	return &apiserver{mode: mode, url: fmt.Sprintf("https://127.0.0.1:%d", port), auditLog: auditLog}, cmd, nil
}

// stopCmd stops a process started by start (SIGTERM, then SIGKILL after
// 10 s) and forgets it.
func (s *stack) stopCmd(cmd *exec.Cmd) {
	s.mu.Lock()
	for i, p := range s.procs {
		if p == cmd {
			s.procs = append(s.procs[:i], s.procs[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
	stopProcess(cmd)
}

// adminKubeconfig returns a kubeconfig for the static admin token.
func (s *stack) adminKubeconfig(a *apiserver) (string, error) {
	path := filepath.Join(s.work, "admin-"+a.mode+".kubeconfig")
	return path, os.WriteFile(path, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: e2e
  context: {cluster: e2e, user: admin}
current-context: e2e
`, a.url, s.caFile, adminToken)), 0o600)
}

// setupRBAC creates the namespaces team-a and team-b and lets alice's group
// read pods in team-a only. The view/edit ClusterRoles stay empty without a
// controller manager, so the Role is explicit.
func (s *stack) setupRBAC() error {
	for _, a := range s.api {
		kc, err := s.adminKubeconfig(a)
		if err != nil {
			return err
		}
		manifest := fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: pod-reader, namespace: team-a}
rules:
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: developers-read-pods, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pod-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: %sdevelopers}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: oidc-provider-read-pods, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pod-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: op:developers}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: op-client:robot}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: impersonator}
rules:
- apiGroups: [""]
  resources: [users, groups]
  verbs: [impersonate]
- apiGroups: [authentication.k8s.io]
  resources: [uids, userextras/scopes, userextras/kubectl-impersonate.io/original-user]
  verbs: [impersonate]
- apiGroups: [authorization.k8s.io]
  resources: [subjectaccessreviews]
  verbs: [create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: e2e-proxy-impersonates}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: impersonator}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: e2e-proxy}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: e2e-view}
rules:
- apiGroups: [""]
  resources: [pods, configmaps]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: gcp-cluster-viewers}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: e2e-view}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: cluster-viewer}
`, a.groupPrefix)
		cmd := exec.Command(s.kubectl, "--kubeconfig="+kc, "apply", "-f", "-")
		cmd.Stdin = strings.NewReader(manifest)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err = runWithContext(ctx, cmd)
		cancel()
		if err != nil {
			return fmt.Errorf("applying RBAC on the %s API server: %v: %s", a.mode, err, out.String())
		}
	}
	return nil
}

func runWithContext(ctx context.Context, cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		return ctx.Err()
	}
}

// countingProxy sits between every client and a provider (Dex,
// oidc-provider) and counts the requests
// that matter: token endpoint calls by grant type, and authorization and
// device authorization requests.
type countingProxy struct {
	url string
	srv *http.Server

	mu     sync.Mutex
	counts map[string]int
	// down drops every connection (SetDown).
	down atomic.Bool
}

// SetDown takes the provider down (every connection dropped) or up again.
func (p *countingProxy) SetDown(down bool) { p.down.Store(down) }

func newCountingProxy(target string, transport http.RoundTripper, certFile, keyFile string) (*countingProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = transport
	p := &countingProxy{counts: map[string]int{}}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.down.Load() {
			// Down: the connection (or HTTP/2 stream) drops, as a crashed
			// provider's would.
			panic(http.ErrAbortHandler)
		}
		switch {
		case r.URL.Path == "/token" && r.Method == http.MethodPost:
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			form, _ := url.ParseQuery(string(body))
			p.inc("token:" + form.Get("grant_type"))
		case r.URL.Path == "/auth":
			p.inc("auth")
		case r.URL.Path == "/device/code" || r.URL.Path == "/device/auth": // Dex's, oidc-provider's
			p.inc("device")
		case r.URL.Path == "/token/revocation":
			p.inc("revoke")
		}
		rp.ServeHTTP(w, r)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.url = "https://" + l.Addr().String()
	p.srv = &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.ServeTLS(l, certFile, keyFile) }()
	return p, nil
}

func (p *countingProxy) inc(k string) {
	p.mu.Lock()
	p.counts[k]++
	p.mu.Unlock()
}

// Count returns the requests of kind k so far ("auth", "device",
// "token:refresh_token", ...).
func (p *countingProxy) Count(k string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts[k]
}

// WebhookDenied and WebhookAllowed are the webhook authorizer's decisions
// for alice in team-a (the rest: no opinion, RBAC decides): it denies get
// pods, which RBAC grants her group, and allows delete configmaps, which
// RBAC does not.
const (
	webhookDeniedReason  = "e2e webhook: alice may not get pods in team-a"
	webhookAllowedReason = "e2e webhook: alice may delete configmaps in team-a"
	// webhookGroupReason: the group developers may not watch pods in team-a,
	// which RBAC's developers-read-pods grants (who-can --verify finds it).
	webhookGroupReason = "e2e webhook: developers may not watch pods in team-a"
)

// webhookDiffSeed is the seed of the RBAC differential on the webhook
// chain; webhookDiffRules are the webhook's decisions for its identities:
// denials of what RBAC may grant, grants RBAC does not make, on resources,
// at cluster scope and on escalation verbs.
const webhookDiffSeed = 6

var webhookDiffRules = []authzwebhook.Rule{
	{User: "rbac-diff-6-a", Verb: "get", Namespace: "rbac-diff-6", Allow: false, Reason: "e2e webhook: a may not get in rbac-diff-6"},
	{User: "rbac-diff-6-c", Verb: "list", Allow: true, Reason: "e2e webhook: c may list anything"},
	{Member: "rbac-diff-6-g2", Verb: "delete", Resource: "configmaps", Allow: false, Reason: "e2e webhook: g2 may not delete configmaps"},
	{User: "rbac-diff-6-d", Verb: "impersonate", Resource: "serviceaccounts", Allow: true, Reason: "e2e webhook: d may impersonate service accounts"},
	{User: "rbac-diff-6-b", Verb: "impersonate-on:user-info:get", Allow: true, Reason: "e2e webhook: b may get as whom it impersonates"},
	{User: "rbac-diff-6-b", Verb: "impersonate:user-info", Allow: true, Reason: "e2e webhook: b may impersonate users"},
}

// startAuthorizationWebhook serves the webhook authorizer on 127.0.0.1
// (TLS, the stack's serving certificate) and writes the
// AuthorizationConfiguration that puts it before Node and RBAC; system:masters
// (the admin, the proxy's upstream) skips it by a matchCondition.
func (s *stack) startAuthorizationWebhook() (string, error) {
	s.webhook = &authzwebhook.Handler{Rules: []authzwebhook.Rule{
		{User: "oidc:alice@example.com", Verb: "get", Resource: "pods", Namespace: "team-a", Allow: false, Reason: webhookDeniedReason},
		{User: "oidc:alice@example.com", Verb: "delete", Resource: "configmaps", Namespace: "team-a", Allow: true, Reason: webhookAllowedReason},
		{Member: "oidc:developers", Verb: "watch", Resource: "pods", Namespace: "team-a", Allow: false, Reason: webhookGroupReason},
		{User: "oidc:alice@example.com", Verb: "get", Resource: "configmaps", Namespace: "team-a", Name: "chain-a", Allow: false, Reason: "e2e webhook: alice may not get chain-a"},
	}}
	s.webhook.Rules = append(s.webhook.Rules, webhookDiffRules...)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	s.webhookSrv = &http.Server{Handler: s.webhook, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.webhookSrv.ServeTLS(l, s.certFile, s.keyFile) }()
	kubeconfig, err := s.webhookKubeconfig("authz-webhook.kubeconfig", fmt.Sprintf("https://%s/authorize", l.Addr()))
	if err != nil {
		return "", err
	}
	sudoEntry, err := s.sudoAuthorizer()
	if err != nil {
		return "", err
	}
	config := filepath.Join(s.work, "authorization-config.yaml")
	return config, os.WriteFile(config, []byte(fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AuthorizationConfiguration
authorizers:
- %s
- type: Webhook
  name: e2e-webhook
  webhook:
    timeout: 5s
    subjectAccessReviewVersion: v1
    matchConditionSubjectAccessReviewVersion: v1
    failurePolicy: Deny
    authorizedTTL: 1s
    unauthorizedTTL: 1s
    connectionInfo: {type: KubeConfigFile, kubeConfigFile: %q}
    matchConditions:
    - expression: "!('system:masters' in request.groups)"
- type: Node
  name: node
- type: RBAC
  name: rbac
`, sudoEntry, kubeconfig)), 0o600)
}

// webhookKubeconfig writes the kubeconfig kube-apiserver reaches a webhook
// authorizer at server with (the stack's CA, no client credential).
func (s *stack) webhookKubeconfig(name, server string) (string, error) {
	path := filepath.Join(s.work, name)
	return path, os.WriteFile(path, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: webhook
  cluster: {server: %q, certificate-authority: %q}
users:
- name: apiserver
  user: {}
contexts:
- name: webhook
  context: {cluster: webhook, user: apiserver}
current-context: webhook
`, server, s.caFile)), 0o600)
}

// sudoAuthorizer is deploy/sudo/authorization-config.yaml's webhook entry
// (as JSON, a YAML flow mapping) with deploy/sudo/authorizer.kubeconfig
// naming a free port on 127.0.0.1, sudoWebhookAddr
// (sudoAuthorizerKubeconfig).
func (s *stack) sudoAuthorizer() (string, error) {
	b, err := os.ReadFile("../../deploy/sudo/authorization-config.yaml")
	if err != nil {
		return "", err
	}
	var deployed struct {
		APIVersion  string           `json:"apiVersion"`
		Kind        string           `json:"kind"`
		Authorizers []map[string]any `json:"authorizers"`
	}
	if err := yaml.UnmarshalStrict(b, &deployed); err != nil {
		return "", fmt.Errorf("deploy/sudo/authorization-config.yaml: %w", err)
	}
	if len(deployed.Authorizers) == 0 || deployed.Authorizers[0]["name"] != "sudo.kubectl-impersonate.io" {
		return "", errors.New("deploy/sudo/authorization-config.yaml: its first authorizer is not sudo.kubectl-impersonate.io")
	}
	port, err := testkit.FreePort()
	if err != nil {
		return "", err
	}
	s.sudoWebhookAddr = fmt.Sprintf("127.0.0.1:%d", port)
	if err := s.sudoWebhookClient(); err != nil {
		return "", err
	}
	kubeconfig, err := s.sudoAuthorizerKubeconfig()
	if err != nil {
		return "", err
	}
	entry := deployed.Authorizers[0]
	webhook, _ := entry["webhook"].(map[string]any)
	info, _ := webhook["connectionInfo"].(map[string]any)
	if info == nil {
		return "", errors.New("deploy/sudo/authorization-config.yaml: its webhook has no connectionInfo")
	}
	info["kubeConfigFile"] = kubeconfig
	j, err := json.Marshal(entry)
	return string(j), err
}
