package proxy

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the proxy's Prometheus metrics, in a registry of their own
// (served on --metrics-address, never on the API port).
type Metrics struct {
	Registry *prometheus.Registry
	requests *prometheus.CounterVec
	refusals *prometheus.CounterVec
	latency  prometheus.Histogram
}

// NewMetrics registers the proxy's metrics and the process and Go runtime
// collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubectl_impersonate_proxy_requests_total", Help: "Requests by HTTP status code."}, []string{"code"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubectl_impersonate_proxy_refusals_total",
			Help: "Requests the proxy refused before forwarding, by reason: no_token, invalid_token (verification " +
				"failures), not_ready (the issuers' keys not loaded yet), identity, impersonation, request, " +
				"overload, sudo (an elevation refused), sudo_not_current (grants not known to be current)."},
			[]string{"reason"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kubectl_impersonate_proxy_request_duration_seconds",
			Help:    "Time to serve a request, upstream included.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}}),
	}
	m.Registry.MustRegister(m.requests, m.refusals, m.latency,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}

func (m *Metrics) observe(code int, d time.Duration) {
	m.requests.WithLabelValues(strconv.Itoa(code)).Inc()
	m.latency.Observe(d.Seconds())
}

func (m *Metrics) refused(reason string) { m.refusals.WithLabelValues(reason).Inc() }

// cacheHits registers the token cache's hits: the requests authenticated
// without the authenticator checking their token, as hits counts them.
func (m *Metrics) cacheHits(hits func() float64) {
	_ = m.Registry.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "kubectl_impersonate_proxy_token_cache_hits_total", Help: "Requests whose token was authenticated " +
			"before (identity from the cache)."}, hits))
}
