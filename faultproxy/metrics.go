package faultproxy

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/bulkheadlab/bulkheadlab/internal/runtimestats"
)

// metrics are the proxy's Prometheus series, on its own registry.
type metrics struct {
	reg            *prometheus.Registry
	requests       prometheus.Counter
	injected       map[string]prometheus.Counter // by fault type, pre-created
	delay          prometheus.Histogram
	upstream       prometheus.Histogram
	upstreamErrors prometheus.Counter
	cancelled      prometheus.Counter
	queueWait      prometheus.Histogram          // capacity fault
	overloaded     prometheus.Counter            // capacity fault
	clientErrors   map[string]prometheus.Counter // raw data plane, by reason (clientErrorReasons), pre-created
}

// delayBuckets cover 0.5 ms to 60 s, with extra resolution around the
// default experiment's 225 ms.
var delayBuckets = []float64{
	0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.215, 0.225,
	0.235, 0.25, 0.3, 0.5, 1, 2.5, 5, 10, 30, 60,
}

// upstreamBuckets are 48 bounds from 0.1 ms to 60 s, ×1.33 apart: fine
// enough for a quantile of a sub-millisecond upstream and of a slow one
// alike.
var upstreamBuckets = func() []float64 {
	b := prometheus.ExponentialBucketsRange(0.0001, 60, 48)
	b[len(b)-1] = 60 // not 59.99999999999…
	return b
}()

func newMetrics(p *Proxy) *metrics {
	reg := prometheus.NewRegistry()
	m := &metrics{
		reg: reg,
		requests: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "faultproxy_requests_total",
			Help: "Requests received on the data plane.",
		}),
		delay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "faultproxy_injected_delay_seconds",
			Help:    "Actual injected delay per delayed request (shorter than requested if the caller went away).",
			Buckets: delayBuckets,
		}),
		upstream: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "faultproxy_upstream_duration_seconds",
			Help:    "Upstream calls that got an answer head: from sending the request (on a pooled connection, or a new one) until the upstream's answer head arrived. Injected delay is excluded; a retry on a stale connection counts from the retry.",
			Buckets: upstreamBuckets,
		}),
		upstreamErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "faultproxy_upstream_errors_total",
			Help: "Forwarded requests that failed at the upstream (answered 502); caller cancellations excluded.",
		}),
		cancelled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "faultproxy_cancelled_total",
			Help: "Requests whose caller went away during a wait for a capacity slot, a delay, a hang or the upstream call.",
		}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "faultproxy_capacity_queue_wait_seconds",
			Help:    "Time requests a capacity fault fired on waited for a slot, of those that got one (zero when one was free).",
			Buckets: delayBuckets,
		}),
		overloaded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "faultproxy_capacity_overloaded_total",
			Help: "Requests answered 503 (X-Dep-Overloaded) because the capacity fault's queue was full.",
		}),
		injected:     map[string]prometheus.Counter{},
		clientErrors: map[string]prometheus.Counter{},
	}
	injected := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "faultproxy_faults_injected_total",
		Help: "Faults that fired, by type.",
	}, []string{"type"})
	for _, t := range Types() {
		m.injected[t] = injected.WithLabelValues(t)
	}
	clientErrors := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "faultproxy_client_errors_total",
		Help: "Requests the raw data plane refused for what their client sent, by reason: malformed (400: a head or a chunked body against RFC 9112), stalled_body (408: no byte of a body for the body idle timeout), head_too_large (431: a head over 1 MiB), unsupported (501 or 505: a transfer coding or an HTTP version it does not serve). The connection is closed; none is an upstream error or a cancellation, and those refused for a head that could not be parsed are not in faultproxy_requests_total.",
	}, []string{"reason"})
	for _, r := range clientErrorReasons {
		m.clientErrors[r] = clientErrors.WithLabelValues(r)
	}
	reg.MustRegister(m.requests, injected, clientErrors, m.delay, m.upstream, m.upstreamErrors, m.cancelled, m.queueWait, m.overloaded,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "faultproxy_inflight_requests",
			Help: "Data-plane requests in progress (delayed, hanging or forwarded).",
		}, func() float64 { return float64(p.Inflight()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "faultproxy_inflight_peak",
			Help: "The most data-plane requests in progress at once since the previous scrape of /metrics (a scrape resets it to the count in progress).",
		}, func() float64 { return float64(p.scrapePeak()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "faultproxy_capacity_in_service",
			Help: "Requests holding a slot of a capacity fault (being served).",
		}, func() float64 { return float64(p.capacity.inService.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "faultproxy_capacity_queue_length",
			Help: "Requests waiting for a slot of a capacity fault.",
		}, func() float64 { return float64(p.capacity.queued.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "faultproxy_capacity_limit",
			Help: "Slots of the current capacity fault; 0 when none is set.",
		}, func() float64 { l, _ := p.set.Load().capacity.limits(); return float64(l) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "faultproxy_capacity_queue_limit",
			Help: "Most requests that may wait for a slot of the current capacity fault; 0 when none is set.",
		}, func() float64 { _, q := p.set.Load().capacity.limits(); return float64(q) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "faultproxy_ledger_dropped_total",
			Help: "Ledger entries dropped because the ledger writer fell behind.",
		}, func() float64 { return float64(p.ledgerDropped()) }),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		runtimestats.NewCollector(), // the proxy's Go scheduling latency and GC pauses
	)
	return m
}
