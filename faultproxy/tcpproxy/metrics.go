package tcpproxy

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/bulkheadlab/bulkheadlab/internal/runtimestats"
)

// metrics are the TCP proxy's Prometheus series, on its own registry.
// Beside its own faultproxy_tcp_* series it exports the HTTP plane's
// faultproxy_inflight_requests and faultproxy_inflight_peak with a
// connection as the unit, so that what the analysis infers from a
// dependency's concurrency works for a TCP dependency as it does for an
// HTTP one.
type metrics struct {
	reg        *prometheus.Registry
	accepted   prometheus.Counter
	dialErrors prometheus.Counter
	bytes      [2]prometheus.Counter
	injected   map[string]prometheus.Counter
	outcomes   map[string]prometheus.Counter
	duration   prometheus.Histogram
	delay      prometheus.Histogram
}

func newMetrics(p *Proxy) *metrics {
	reg := prometheus.NewRegistry()
	m := &metrics{
		reg: reg,
		accepted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "faultproxy_tcp_connections_total",
			Help: "Connections accepted on the TCP data plane.",
		}),
		dialErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "faultproxy_tcp_upstream_dial_errors_total",
			Help: "Connections whose upstream could not be dialled (closed at once).",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "faultproxy_tcp_connection_duration_seconds",
			Help:    "How long each ended connection was open, from accept to close.",
			Buckets: prometheus.ExponentialBucketsRange(0.0001, 3600, 40),
		}),
		delay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "faultproxy_injected_delay_seconds",
			Help:    "Actual delay of each chunk a latency fault held, from its read to its write.",
			Buckets: prometheus.ExponentialBucketsRange(0.0001, 60, 40),
		}),
		injected: map[string]prometheus.Counter{},
		outcomes: map[string]prometheus.Counter{},
	}
	bytes := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "faultproxy_tcp_bytes_total",
		Help: "Bytes written by the TCP data plane, by stream: upstream (client to upstream), downstream (upstream to client).",
	}, []string{"stream"})
	m.bytes[dirUp], m.bytes[dirDown] = bytes.WithLabelValues(StreamUpstream), bytes.WithLabelValues(StreamDownstream)
	injected := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "faultproxy_faults_injected_total",
		Help: "Faults that applied to a connection (once per connection and fault set), by type.",
	}, []string{"type"})
	for _, t := range Types {
		m.injected[t] = injected.WithLabelValues(t)
	}
	closed := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "faultproxy_tcp_closed_total",
		Help: "Ended connections by outcome: closed, error (a peer reset or vanished), reset, timeout, limit_data, refused (down), dial_error, stopped.",
	}, []string{"outcome"})
	for _, o := range outcomes {
		m.outcomes[o] = closed.WithLabelValues(o)
	}
	reg.MustRegister(m.accepted, m.dialErrors, m.duration, m.delay, bytes, injected, closed,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "faultproxy_tcp_open_connections",
			Help: "Connections open on the TCP data plane.",
		}, func() float64 { return float64(p.Open()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "faultproxy_inflight_requests",
			Help: "TCP data plane: connections open (a connection is the unit).",
		}, func() float64 { return float64(p.Open()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "faultproxy_inflight_peak",
			Help: "TCP data plane: the most connections open at once since the previous scrape of /metrics (a scrape resets it to the count open).",
		}, func() float64 { return float64(p.scrapePeak()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "faultproxy_tcp_delayed_bytes",
			Help: "Bytes that latency faults hold (read, not yet written), over all connections; at most the delay buffer per direction of a connection.",
		}, func() float64 { return float64(p.delayed.Load()) }),
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
