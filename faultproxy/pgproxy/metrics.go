package pgproxy

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/bulkheadlab/bulkheadlab/internal/runtimestats"
)

// Outcomes of a query, as the ledger and the metrics name them.
const (
	outcomeForwarded = "forwarded" // answered by the upstream
	outcomeError     = "error"     // answered by an error fault
	outcomeCancelled = "cancelled" // a hang ended by the client's cancel request (answered 57014)
	outcomeHang      = "hang"      // a hang whose connection ended
	outcomeAborted   = "aborted"   // its connection ended before its answer (client or upstream gone, proxy stopped)
)

var outcomes = []string{outcomeForwarded, outcomeError, outcomeCancelled, outcomeHang, outcomeAborted}

// metrics are the PostgreSQL proxy's Prometheus series, on its own
// registry. Beside its own faultproxy_pg_* series it exports the HTTP
// plane's faultproxy_requests_total, faultproxy_inflight_requests,
// faultproxy_inflight_peak and faultproxy_cancelled_total with a query as
// the unit, so that what the analysis infers from a dependency's
// concurrency (a flat count in flight while callers fail) works for a
// database as it does for an HTTP dependency.
type metrics struct {
	reg        *prometheus.Registry
	accepted   prometheus.Counter
	dialErrors prometheus.Counter
	cancels    prometheus.Counter
	tls        prometheus.Counter
	requests   prometheus.Counter
	cancelled  prometheus.Counter
	injected   map[string]prometheus.Counter
	outcomes   map[string]prometheus.Counter
	protocol   map[string]prometheus.Counter
	duration   prometheus.Histogram
	delay      prometheus.Histogram
}

func newMetrics(p *Proxy) *metrics {
	reg := prometheus.NewRegistry()
	m := &metrics{
		reg: reg,
		accepted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "faultproxy_pg_connections_total",
			Help: "Client connections accepted on the PostgreSQL data plane (cancel requests included).",
		}),
		dialErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "faultproxy_pg_upstream_dial_errors_total",
			Help: "Connections whose upstream could not be dialled (closed at once).",
		}),
		cancels: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "faultproxy_pg_cancel_requests_total",
			Help: "CancelRequests passed on to the upstream.",
		}),
		tls: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "faultproxy_pg_tls_passthrough_total",
			Help: "Connections relayed as plain TCP because their client started TLS (TLSPassthrough): faults act per connection there.",
		}),
		requests: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "faultproxy_requests_total",
			Help: "PostgreSQL data plane: queries received (a simple Query, or an extended-query batch up to its Sync).",
		}),
		cancelled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "faultproxy_cancelled_total",
			Help: "PostgreSQL data plane: queries whose client went away (or cancelled a hang) while the proxy held them.",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "faultproxy_pg_query_duration_seconds",
			Help:    "Answered queries: from the proxy's receipt of the query until its ReadyForQuery went to the client.",
			Buckets: prometheus.ExponentialBucketsRange(0.0001, 60, 48),
		}),
		delay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "faultproxy_injected_delay_seconds",
			Help:    "Queries a latency fault held: from the proxy's receipt of the query until its answer was let go.",
			Buckets: prometheus.ExponentialBucketsRange(0.0001, 60, 40),
		}),
		injected: map[string]prometheus.Counter{},
		outcomes: map[string]prometheus.Counter{},
		protocol: map[string]prometheus.Counter{},
	}
	injected := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "faultproxy_faults_injected_total",
		Help: "Faults that applied to a query, by type.",
	}, []string{"type"})
	for _, t := range Types {
		m.injected[t] = injected.WithLabelValues(t)
	}
	queries := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "faultproxy_pg_queries_total",
		Help: "Ended queries by outcome: forwarded (answered by the upstream), error (an error fault's answer), cancelled (a hang ended by a cancel request), hang (a hang whose connection ended), aborted (the connection ended before the answer).",
	}, []string{"outcome"})
	for _, o := range outcomes {
		m.outcomes[o] = queries.WithLabelValues(o)
	}
	protocol := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "faultproxy_pg_protocol_errors_total",
		Help: "Connections closed for a malformed stream, by reason: bad_length and too_long (a typed message's length below 4 or above 1 GiB), bad_startup_length, bad_startup_code, too_many_requests (SSL/GSS requests), startup_timeout, upstream_bad_length.",
	}, []string{"reason"})
	for _, r := range protocolReasons {
		m.protocol[r] = protocol.WithLabelValues(r)
	}
	reg.MustRegister(m.accepted, m.dialErrors, m.cancels, m.tls, m.requests, m.cancelled, m.duration, m.delay,
		injected, queries, protocol,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "faultproxy_pg_open_connections",
			Help: "Client connections open on the PostgreSQL data plane.",
		}, func() float64 { return float64(p.Open()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "faultproxy_inflight_requests",
			Help: "PostgreSQL data plane: queries in flight (received, not yet answered whole; a query is the unit).",
		}, func() float64 { return float64(p.Inflight()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "faultproxy_inflight_peak",
			Help: "PostgreSQL data plane: the most queries in flight at once since the previous scrape of /metrics (a scrape resets it to the count in flight).",
		}, func() float64 { return float64(p.scrapePeak()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "faultproxy_ledger_dropped_total",
			Help: "Ledger entries dropped because the ledger writer fell behind.",
		}, func() float64 { return float64(p.ledgerDropped()) }),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		runtimestats.NewCollector(),
	)
	return m
}
