package proxy

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Server serves a Handler over TLS (its certificate reloaded as it
// changes), and the Handler's metrics on a listener of their own, until
// Run's context ends; then it shuts both down, giving requests in flight
// ShutdownTimeout (0: 5 s).
type Server struct {
	Handler *Handler
	// Listen is the API address; MetricsAddress, if set, the metrics'
	// (plain HTTP, never on the API port).
	Listen, MetricsAddress string
	Certs                  *CertReloader
	ShutdownTimeout        time.Duration
	// Listening, if set, is told the addresses once both listen (metrics
	// nil when not served).
	Listening func(api, metrics net.Addr)
}

// Run serves until ctx ends, and returns nil then; an error if it cannot
// listen or serve.
func (s *Server) Run(ctx context.Context) error {
	l, err := net.Listen("tcp", s.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", s.Listen, err)
	}
	srv := &http.Server{Handler: s.Handler, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 90 * time.Second,
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: s.Certs.GetCertificate},
		ErrorLog:  s.Handler.errorLog()}
	servers := []*http.Server{srv}
	var metricsAddr net.Addr
	if s.MetricsAddress != "" {
		ml, err := net.Listen("tcp", s.MetricsAddress)
		if err != nil {
			_ = l.Close()
			return fmt.Errorf("listening on --metrics-address %s: %w", s.MetricsAddress, err)
		}
		if s.Handler.Metrics == nil {
			s.Handler.Metrics = NewMetrics()
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", s.Handler.Metrics.Handler())
		msrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: s.Handler.errorLog()}
		servers = append(servers, msrv)
		go func() { _ = msrv.Serve(ml) }()
		metricsAddr = ml.Addr()
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), cmp.Or(s.ShutdownTimeout, 5*time.Second))
		defer cancel()
		for _, srv := range servers {
			_ = srv.Shutdown(sctx)
		}
	}()
	if s.Listening != nil {
		s.Listening(l.Addr(), metricsAddr)
	}
	if err := srv.ServeTLS(l, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-stopped
	return nil
}
