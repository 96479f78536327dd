package linked

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/kubecode"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/proxy"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/sudo"
)

// LeaseName is the Lease the sudo controller's replicas elect a leader
// with.
const LeaseName = "kubectl-impersonate-sudo-controller"

// RunSudoController watches grants and, while it leads, materialises
// them (pkg/server/sudo's Controller) until ctx ends.
func (Code) RunSudoController(ctx context.Context, o kubecode.SudoControllerConfig) error {
	var cfg *rest.Config
	var err error
	if o.InCluster {
		cfg, err = rest.InClusterConfig()
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	}
	if err != nil {
		return fmt.Errorf("loading the controller's credential: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("making the controller's client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("making the client that watches sudo grants: %w", err)
	}
	log := func(s string) { logging.Notice(o.Log, s) }
	store := sudo.NewStore()
	go store.Watch(ctx, dyn, log)
	if o.WebhookListen != "" {
		stop, err := serveAuthorizer(ctx, o, store)
		if err != nil {
			return err
		}
		defer stop()
	}
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	id := host + "_" + hex.EncodeToString(b)
	logging.Noticef(o.Log, "sudo-controller %s: electing a leader on lease %s/%s", id, o.LeaseNamespace, LeaseName)
	(&sudo.Controller{Store: store, Client: client, Interval: o.Interval, Log: log}).Lead(ctx, o.LeaseNamespace,
		LeaseName, id)
	return nil
}

// serveAuthorizer serves sudo.Authorizer over TLS on o.WebhookListen until
// ctx ends (stop waits for it).
func serveAuthorizer(ctx context.Context, o kubecode.SudoControllerConfig, store *sudo.Store) (func(), error) {
	// Read again when rotated, as the proxy's.
	certs := &proxy.CertReloader{CertFile: o.CertFile, KeyFile: o.KeyFile,
		OnError: func(err error) {
			logging.Noticef(o.Log, "sudo-controller: keeping the webhook's previous certificate: %v", err)
		}}
	if err := certs.Load(); err != nil {
		return nil, fmt.Errorf("the webhook's serving certificate: %w", err)
	}
	cfg := &tls.Config{GetCertificate: certs.GetCertificate, MinVersion: tls.VersionTLS12}
	if o.ClientCAFile != "" {
		pem, err := os.ReadFile(o.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("reading --client-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--client-ca-file %s holds no PEM certificate", o.ClientCAFile)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	l, err := net.Listen("tcp", o.WebhookListen)
	if err != nil {
		return nil, fmt.Errorf("listening for the authorization webhook: %w", err)
	}
	// Bounded as kube-apiserver's calls are (a 3 s timeout): a slow or idle
	// client holds nothing long.
	errorLog := log.New(logging.LineWriter{W: o.Log}, logging.Prefix+"sudo-controller: ", 0)
	srv := &http.Server{Handler: sudo.Authorizer{Store: store}, TLSConfig: cfg, ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, IdleTimeout: 90 * time.Second,
		MaxHeaderBytes: 64 << 10, ErrorLog: errorLog}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.ServeTLS(l, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logging.Noticef(o.Log, "sudo-controller: the authorization webhook stopped: %v", err)
		}
	}()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	logging.Noticef(o.Log, "sudo-controller: serving the fail-closed authorization webhook on https://%s", l.Addr())
	return func() { <-done }, nil
}
