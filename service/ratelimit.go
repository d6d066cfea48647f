package service

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/failsafe-go/failsafe-go/ratelimiter"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// RejectRate is the X-Bulkhead-Reject value of a rate limiter's refusals
// (ratelimit mode): over the rate, not over a bulkhead, but a refusal a
// load generator counts with the others.
const RejectRate = rundata.RejectRate

// rateLimit is one dependency's smooth rate limiter. Safe for concurrent
// use.
type rateLimit struct {
	rate      float64
	maxWait   time.Duration
	lim       ratelimiter.RateLimiter[any]
	permitted atomic.Uint64
	rejected  atomic.Uint64
}

func newRateLimit(rate float64, maxWait time.Duration) *rateLimit {
	interval := time.Duration(float64(time.Second) / rate)
	return &rateLimit{rate: rate, maxWait: maxWait,
		lim: ratelimiter.NewSmoothBuilderWithMaxRate[any](interval).WithMaxWaitTime(maxWait).Build()}
}

// acquire waits for the call's turn, at most maxWait: an error wrapping
// ratelimiter.ErrExceeded when the turn is further off (at once), or
// ctx's error.
func (r *rateLimit) acquire(ctx context.Context) error {
	err := r.lim.AcquirePermitWithMaxWait(ctx, r.maxWait)
	switch {
	case err == nil:
		r.permitted.Add(1)
	case errors.Is(err, ratelimiter.ErrExceeded):
		r.rejected.Add(1)
	}
	return err
}

// limiter returns the endpoint's rate limiter, nil outside ratelimit mode.
func (l *Layout) limiter(endpoint string) *rateLimit { return l.limiters[endpoint] }

// rateMetrics exports the layout's rate limiters, read at scrape time.
type rateMetrics struct {
	layout                    *Layout
	endpoints                 []string
	rate, permitted, rejected *prometheus.Desc
}

func newRateMetrics(l *Layout, endpoints []string) *rateMetrics {
	dep := []string{"dependency"}
	return &rateMetrics{layout: l, endpoints: endpoints,
		rate:      prometheus.NewDesc("bulkheadlab_ratelimit_rate", "The dependency's rate limit, in calls per second.", dep, nil),
		permitted: prometheus.NewDesc("bulkheadlab_ratelimit_permitted_total", "Calls the dependency's rate limiter let through.", dep, nil),
		rejected:  prometheus.NewDesc("bulkheadlab_ratelimit_rejected_total", "Calls the dependency's rate limiter refused: over the rate.", dep, nil),
	}
}

// Describe implements prometheus.Collector.
func (m *rateMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.rate
	ch <- m.permitted
	ch <- m.rejected
}

// Collect implements prometheus.Collector.
func (m *rateMetrics) Collect(ch chan<- prometheus.Metric) {
	for _, e := range m.endpoints {
		r := m.layout.limiter(e)
		ch <- prometheus.MustNewConstMetric(m.rate, prometheus.GaugeValue, r.rate, e)
		ch <- prometheus.MustNewConstMetric(m.permitted, prometheus.CounterValue, float64(r.permitted.Load()), e)
		ch <- prometheus.MustNewConstMetric(m.rejected, prometheus.CounterValue, float64(r.rejected.Load()), e)
	}
}

// writeRateRefusal answers a call its rate limiter refused (or whose
// client went away while it waited for its turn).
func writeRateRefusal(w http.ResponseWriter, endpoint string, err error) {
	if errors.Is(err, ratelimiter.ErrExceeded) {
		writeOverShare(w, RejectRate, fmt.Sprintf("dependency %s: over its rate limit", endpoint))
		return
	}
	writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: err.Error(), Reason: "cancelled"})
}
