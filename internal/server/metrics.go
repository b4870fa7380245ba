package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics uses a registry per Server (not the global one) so that tests can
// run many servers in one process.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec

	groupFailures prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "latchkey_http_requests_total",
			Help: "HTTP requests by route pattern, method and status code.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "latchkey_http_request_duration_seconds",
			Help:    "HTTP request latency by route pattern and method.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route", "method"}),
	}
	m.groupFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "latchkey_group_permissions_api_failures_total",
		Help: "Failed calls to the group permissions API (introspection answered without group policies).",
	})
	m.reg.MustRegister(m.requests, m.latency, m.groupFailures,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// observe records one request. The route is the matched pattern, never the
// raw path, so label cardinality stays bounded.
func (m *metrics) observe(r *http.Request, status int, d time.Duration) {
	route := r.Pattern
	if route == "" {
		route = "unmatched"
	}
	m.requests.WithLabelValues(route, r.Method, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route, r.Method).Observe(d.Seconds())
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
