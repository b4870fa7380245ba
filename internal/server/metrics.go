package server

import (
	"database/sql"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/throttle"
)

// metrics uses a registry per Server (not the global one) so that tests can
// run many servers in one process. Every label has a small, fixed set of
// values, except client_id, which is added only with metrics.client_labels
// (docs/DEPLOY.md, "Metrics").
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec

	clientLabels   bool
	tokens         *prometheus.CounterVec // grant, outcome[, client_id]
	introspections *prometheus.CounterVec // outcome[, client_id]
	logins         *prometheus.CounterVec // outcome
	stepUps        *prometheus.CounterVec // outcome
	storeLatency   *prometheus.HistogramVec

	groupFailures prometheus.Counter
}

func newMetrics(clientLabels bool) *metrics {
	withClient := func(labels ...string) []string {
		if clientLabels {
			return append(labels, "client_id")
		}
		return labels
	}
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
		clientLabels: clientLabels,
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "latchkey_token_requests_total",
			Help: "Token endpoint answers by grant type and outcome (issued, or the refusal's event type in lower case).",
		}, withClient("grant", "outcome")),
		introspections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "latchkey_introspections_total",
			Help: "Introspections by outcome: active, inactive (or the caller refused), usage_limit_exceeded.",
		}, withClient("outcome")),
		logins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "latchkey_logins_total",
			Help: "Password logins by outcome: succeeded, failed, throttled.",
		}, []string{"outcome"}),
		stepUps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "latchkey_step_ups_total",
			Help: "TOTP step-ups by outcome: succeeded, failed.",
		}, []string{"outcome"}),
		storeLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "latchkey_store_statement_duration_seconds",
			Help:    "Store statement latency by operation (exec, query).",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}, []string{"op"}),
	}
	m.groupFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "latchkey_group_permissions_api_failures_total",
		Help: "Failed calls to the group permissions API (introspection answered without group policies).",
	})
	m.reg.MustRegister(m.requests, m.latency, m.groupFailures, m.tokens, m.introspections, m.logins, m.stepUps,
		m.storeLatency, throttleCollector{desc: prometheus.NewDesc("latchkey_throttle_refusals_total",
			"Attempts refused by a throttle, by kind (docs/THROTTLES.md: login:pair, client:ip, ...).", []string{"kind"}, nil)},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// observeStore has the store report its statement latency, pool use and
// event-log backlog.
func (m *metrics) observeStore(st store.Store) {
	if o, ok := st.(interface {
		ObserveStatements(func(op string, d time.Duration))
	}); ok {
		o.ObserveStatements(func(op string, d time.Duration) { m.storeLatency.WithLabelValues(op).Observe(d.Seconds()) })
	}
	if p, ok := st.(interface {
		PoolStats() (write, read sql.DBStats, separate bool)
	}); ok {
		pool := func(name string, pick func() sql.DBStats) {
			m.reg.MustRegister(
				gauge("latchkey_store_pool_in_use", "Store connections in use.", name, func() float64 { return float64(pick().InUse) }),
				gauge("latchkey_store_pool_idle", "Idle store connections.", name, func() float64 { return float64(pick().Idle) }),
				gauge("latchkey_store_pool_max_open", "The most store connections the pool opens.", name,
					func() float64 { return float64(pick().MaxOpenConnections) }),
				prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "latchkey_store_pool_wait_seconds_total",
					Help: "Time spent waiting for a free store connection.", ConstLabels: prometheus.Labels{"pool": name}},
					func() float64 { return pick().WaitDuration.Seconds() }),
			)
		}
		pool("write", func() sql.DBStats { w, _, _ := p.PoolStats(); return w })
		if _, _, separate := p.PoolStats(); separate { // SQLite reads on a pool of their own
			pool("read", func() sql.DBStats { _, r, _ := p.PoolStats(); return r })
		}
	}
	// SQLite's event sink outside a transaction is its event log.
	if b, ok := st.EventSink().(interface{ Backlog() int }); ok {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "latchkey_event_log_backlog",
			Help: "Events answered and written to the event log, not yet indexed for search (SQLite)."},
			func() float64 { return float64(b.Backlog()) }))
	}
}

func gauge(name, help, pool string, fn func() float64) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: prometheus.Labels{"pool": pool}}, fn)
}

// throttleCollector reads the process-wide refusal counts of package throttle.
type throttleCollector struct{ desc *prometheus.Desc }

func (c throttleCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c throttleCollector) Collect(ch chan<- prometheus.Metric) {
	for kind, n := range throttle.RefusalCounts() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(n), kind)
	}
}

// grantLabels are the token endpoint's grant types as metric labels.
var grantLabels = map[string]string{
	"authorization_code": "authorization_code", "client_credentials": "client_credentials",
	"refresh_token": "refresh_token", "password": "password",
	"urn:ietf:params:oauth:grant-type:device_code": "device_code",
}

// observeEvent counts the outcome an event records (events.Recorder.Observe).
func (m *metrics) observeEvent(f request.Facts, e *store.Event) {
	withClient := func(labels ...string) []string {
		if m.clientLabels {
			return append(labels, e.ClientID)
		}
		return labels
	}
	switch t := e.Type; {
	case strings.HasPrefix(t, "TOKEN_REQUEST_"):
		grant := "none"
		if g := f.GrantType; g != "" {
			if grant = grantLabels[g]; grant == "" {
				grant = "other"
			}
		}
		outcome := strings.ToLower(strings.TrimPrefix(t, "TOKEN_REQUEST_"))
		if strings.HasSuffix(t, "ACCESS_TOKEN_CREATED") || strings.HasSuffix(t, "ACCESS_TOKEN_REFRESHED") {
			outcome = "issued"
		}
		m.tokens.WithLabelValues(withClient(grant, outcome)...).Inc()
	case t == "TOKEN_INTROSPECTION_SUCCESS":
		m.introspections.WithLabelValues(withClient("active")...).Inc()
	case t == "TOKEN_INTROSPECTION_FAILED":
		m.introspections.WithLabelValues(withClient("inactive")...).Inc()
	case t == "TOKEN_INTROSPECTION_USAGE_LIMIT_EXCEEDED":
		m.introspections.WithLabelValues(withClient("usage_limit_exceeded")...).Inc()
	case t == "LOGIN_SUCCEEDED":
		m.logins.WithLabelValues("succeeded").Inc()
	case t == "LOGIN_FAILED":
		m.logins.WithLabelValues("failed").Inc()
	case t == "LOGIN_THROTTLED":
		m.logins.WithLabelValues("throttled").Inc()
	case t == "STEP_UP_TOTP_SUCCEEDED", t == "STEP_UP_EMAIL_CODE_SUCCEEDED":
		m.stepUps.WithLabelValues("succeeded").Inc()
	case t == "OTP_AUTH_NOT_AUTHENTICATED_INVALID_OTP":
		m.stepUps.WithLabelValues("failed").Inc()
	}
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
