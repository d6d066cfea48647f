package service

import (
	"sync/atomic"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	fbulkhead "github.com/failsafe-go/failsafe-go/bulkhead"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/prometheus/client_golang/prometheus"
)

// Values of MetricBreakerState.
const (
	breakerClosed   = 0
	breakerHalfOpen = 1
	breakerOpen     = 2
)

// policyVecs are the service's policy metrics, one child per endpoint.
type policyVecs struct {
	breakerState, breakerOpenedAt                           *prometheus.GaugeVec
	breakerTransitions                                      *prometheus.CounterVec
	breakerRejected, retries, budgetExceeded, limiterReject *prometheus.CounterVec
}

func newPolicyVecs() policyVecs {
	dep := []string{"dependency"}
	g := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, dep)
	}
	c := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append(dep, labels...))
	}
	return policyVecs{
		breakerState:       g(rundata.MetricBreakerState, "Circuit breaker state: 0 closed, 1 half-open, 2 open."),
		breakerOpenedAt:    g(rundata.MetricBreakerOpenedAt, "Unix time of the breaker's last transition to open; 0 before the first."),
		breakerTransitions: c(rundata.MetricBreakerTransitions, "Circuit breaker transitions, by the state entered (closed, half_open, open).", "to"),
		breakerRejected:    c(rundata.MetricBreakerRejected, "Calls refused by an open (or saturated half-open) breaker."),
		retries:            c(rundata.MetricRetries, "Retries the service made (attempts beyond the first)."),
		budgetExceeded:     c(rundata.MetricRetryBudgetRefuse, "Retries refused by the retry budget."),
		limiterReject:      c(rundata.MetricLimiterRejected, "Calls refused by the adaptive concurrency limiter."),
	}
}

func (v policyVecs) register(r prometheus.Registerer) {
	r.MustRegister(v.breakerState, v.breakerOpenedAt, v.breakerTransitions, v.breakerRejected, v.retries, v.budgetExceeded, v.limiterReject)
}

// policyMetrics are one endpoint's policy metrics.
type policyMetrics struct {
	endpoint                                 string
	reg                                      prometheus.Registerer
	breakerState, breakerOpenedAt            prometheus.Gauge
	breakerTransitions                       *prometheus.CounterVec
	breakerRejected, retries, budgetExceeded prometheus.Counter
	limiterRejected                          prometheus.Counter
	failsafe                                 *failsafeBulkhead
}

// newPolicyMetrics creates the children of the stages cfg configures, so
// that they are exported (as zeros) from the start.
func newPolicyMetrics(v policyVecs, r prometheus.Registerer, endpoint string, cfg PolicyConfig) *policyMetrics {
	m := &policyMetrics{endpoint: endpoint, reg: r}
	// Children that are never used are not created: an endpoint without a
	// breaker exports no breaker series.
	m.breakerState, m.breakerOpenedAt = noopGauge{}, noopGauge{}
	m.breakerRejected, m.retries, m.budgetExceeded, m.limiterRejected = noopCounter{}, noopCounter{}, noopCounter{}, noopCounter{}
	if cfg.Breaker != nil {
		m.breakerState = v.breakerState.WithLabelValues(endpoint)
		m.breakerOpenedAt = v.breakerOpenedAt.WithLabelValues(endpoint)
		m.breakerRejected = v.breakerRejected.WithLabelValues(endpoint)
		m.breakerTransitions = v.breakerTransitions
		for _, to := range []string{"closed", "half_open", "open"} {
			v.breakerTransitions.WithLabelValues(endpoint, to)
		}
	}
	if cfg.Retry != nil {
		m.retries = v.retries.WithLabelValues(endpoint)
		if cfg.Retry.Budget != nil {
			m.budgetExceeded = v.budgetExceeded.WithLabelValues(endpoint)
		}
	}
	if cfg.Limiter != nil {
		m.limiterRejected = v.limiterReject.WithLabelValues(endpoint)
	}
	return m
}

// breakerChanged records a transition of the breaker.
func (m *policyMetrics) breakerChanged(to circuitbreaker.State, at time.Time) {
	var label string
	switch to {
	case circuitbreaker.OpenState:
		m.breakerState.Set(breakerOpen)
		m.breakerOpenedAt.Set(float64(at.UnixNano()) / 1e9)
		label = "open"
	case circuitbreaker.HalfOpenState:
		m.breakerState.Set(breakerHalfOpen)
		label = "half_open"
	default:
		m.breakerState.Set(breakerClosed)
		label = "closed"
	}
	m.breakerTransitions.WithLabelValues(m.endpoint, label).Inc()
}

// limiter exports l's current limit and in-flight calls.
func (m *policyMetrics) limiter(l adaptivelimiter.Metrics) {
	labels := prometheus.Labels{"dependency": m.endpoint}
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: rundata.MetricLimiterLimit, ConstLabels: labels,
			Help: "The adaptive limiter's current concurrency limit."}, func() float64 { return float64(l.Limit()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: rundata.MetricLimiterInflight, ConstLabels: labels,
			Help: "Calls in flight through the adaptive limiter."}, func() float64 { return float64(l.Inflight()) }),
	)
}

type noopGauge struct{ prometheus.Gauge }

func (noopGauge) Set(float64) {}

type noopCounter struct{ prometheus.Counter }

func (noopCounter) Inc() {}

// failsafeBulkhead is failsafe-go's bulkhead with the counters the pool
// metrics need; it exports the pool's metric names (bulkhead_pool_limit,
// _in_use, _rejected_total{reason="full"}, _exhausted_since_seconds is not
// known) under the endpoint's pool name, so the analysis reads it like a
// pool.
type failsafeBulkhead struct {
	bh                                fbulkhead.Bulkhead[callResult]
	inUse                             atomic.Int64
	rejected                          atomic.Uint64
	limit                             int
	limitDesc, inUseDesc, rejectedDsc *prometheus.Desc
}

func newFailsafeBulkhead(pool string, cfg PoolConfig, maxWait time.Duration) *failsafeBulkhead {
	wait := time.Duration(0)
	if cfg.Queue > 0 {
		wait = maxWait
	}
	bh := fbulkhead.NewBuilder[callResult](uint(cfg.Size)).WithMaxWaitTime(wait).Build()
	l := prometheus.Labels{"pool": pool} // the labels and help of the pool's own metrics: one registry holds both
	return &failsafeBulkhead{
		bh: bh, limit: cfg.Size,
		limitDesc:   prometheus.NewDesc(rundata.MetricPoolLimit, "Permits of the pool (its concurrency limit).", nil, l),
		inUseDesc:   prometheus.NewDesc(rundata.MetricPoolInUse, "Permits currently held.", nil, l),
		rejectedDsc: prometheus.NewDesc(rundata.MetricPoolRejected, "Acquire calls rejected, by reason (full, wait_timeout, cancelled).", []string{"reason"}, l),
	}
}

// Describe implements prometheus.Collector.
func (f *failsafeBulkhead) Describe(ch chan<- *prometheus.Desc) {
	ch <- f.limitDesc
	ch <- f.inUseDesc
	ch <- f.rejectedDsc
}

// Collect implements prometheus.Collector.
func (f *failsafeBulkhead) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(f.limitDesc, prometheus.GaugeValue, float64(f.limit))
	ch <- prometheus.MustNewConstMetric(f.inUseDesc, prometheus.GaugeValue, float64(f.inUse.Load()))
	ch <- prometheus.MustNewConstMetric(f.rejectedDsc, prometheus.CounterValue, float64(f.rejected.Load()), "full")
}
