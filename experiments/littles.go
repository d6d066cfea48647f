package experiments

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis"
)

// ErrBadSizing is wrapped by PoolSize errors.
var ErrBadSizing = errors.New("invalid sizing input")

// PoolSize applies Little's law: the demand is rate·latency permits in
// flight, and the pool size is that demand times headroom, rounded up
// (at least 1). Seed-000's instant payments: 200/s × 20ms = 4 permits,
// doubled for peaks = 8.
func PoolSize(rate float64, latency time.Duration, headroom float64) (demand float64, size int, err error) {
	switch {
	case math.IsNaN(rate) || math.IsInf(rate, 0) || rate <= 0:
		return 0, 0, fmt.Errorf("%w: rate must be > 0 requests per second, got %g", ErrBadSizing, rate)
	case latency <= 0:
		return 0, 0, fmt.Errorf("%w: latency must be > 0, got %s", ErrBadSizing, latency)
	case math.IsNaN(headroom) || headroom < 1 || headroom > 100:
		return 0, 0, fmt.Errorf("%w: headroom must be between 1 and 100, got %g", ErrBadSizing, headroom)
	}
	demand = rate * latency.Seconds()
	need := demand * headroom
	if need > 1e9 {
		return 0, 0, fmt.Errorf("%w: %g permits is not a pool", ErrBadSizing, need)
	}
	// Round away float noise (200 × 0.02 × 2 = 8.000000000000002) before Ceil.
	size = int(math.Ceil(math.Round(need*1e9) / 1e9))
	return demand, max(size, 1), nil
}

// HoldingTime is the expected time an endpoint's call to dependency dep
// holds a permit under condition c (nil: no fault): the dependency's
// latency, plus each latency fault's delay for its share of calls, ~0 for
// errors and aborts, T for hangs; capped at T, where the service gives up.
func (s *Spec) HoldingTime(dep string, c *Condition) time.Duration {
	t := s.Service.Timeout.D
	base := s.Dependencies.A.Latency.D
	if dep == "B" {
		base = s.Dependencies.B.Latency.D
	}
	if c == nil || c.Dependency != dep || len(c.Faults) == 0 {
		return min(base, t)
	}
	var w, share float64
	for _, f := range c.Faults {
		p := min(f.Percent/100, 1-share)
		share += p
		switch f.Type {
		case "latency":
			w += p * float64(min(base+f.Latency.D, t))
		case "hang":
			w += p * float64(t)
		}
	}
	w += (1 - share) * float64(min(base, t))
	return time.Duration(w)
}

// endpointDep maps an endpoint to its dependency.
func endpointDep(e string) string {
	if e == "a" {
		return "A"
	}
	return "B"
}

// Endpoints describes the two endpoints of a run, with fault-phase rates.
func (s *Spec) Endpoints(c *Condition, m *Mode) []analysis.EndpointInfo {
	r := s.FaultRates(c)
	pool := func(e string) string {
		if m.Name == ModeBulkhead {
			return e
		}
		return "shared"
	}
	return []analysis.EndpointInfo{
		{Name: "a", Dependency: "A", Pool: pool("a"), Rate: r.A, BaseLatency: s.Dependencies.A.Latency.D},
		{Name: "b", Dependency: "B", Pool: pool("b"), Rate: r.B, BaseLatency: s.Dependencies.B.Latency.D},
	}
}

// Preview predicts, by Little's law, each pool's in-flight demand
// (Σ rate × holding time) in the baseline and fault phases of condition c
// in mode m, and the time from fault start until the pool is exhausted.
func (s *Spec) Preview(c *Condition, m *Mode) []analysis.PoolInfo {
	fr := s.FaultRates(c)
	rate := func(e string, fault bool) float64 {
		switch {
		case fault && e == "a":
			return fr.A
		case fault:
			return fr.B
		case e == "a":
			return s.Load.Rates.A
		}
		return s.Load.Rates.B
	}
	var out []analysis.PoolInfo
	for _, pl := range s.Pools(m) {
		var base, fault float64
		var flows []flow
		for _, e := range pl.Endpoints {
			wb, wf := s.HoldingTime(endpointDep(e), nil), s.HoldingTime(endpointDep(e), c)
			base += rate(e, false) * wb.Seconds()
			fault += rate(e, true) * wf.Seconds()
			flows = append(flows, flow{rate(e, false), wb.Seconds(), rate(e, true), wf.Seconds()})
		}
		out = append(out, analysis.PoolInfo{
			Name: pl.Name, Limit: pl.Limit, Queue: pl.Queue, MaxWait: s.Service.MaxWait.D, Endpoints: pl.Endpoints,
			PredictedDemand:     map[string]float64{"baseline": base, "fault": fault},
			PredictedExhaustion: exhaustion(flows, float64(pl.Limit)),
		})
	}
	return out
}

// flow is one endpoint's arrivals into a pool before and after fault start.
type flow struct{ rate0, w0, rate1, w1 float64 }

// exhaustion returns the first time after fault start at which the
// permits in use reach limit, or 0 if they never do. Permits in use at t
// are the new arrivals still held, rate1·min(t, w1), plus the calls started
// before the fault and not yet done, rate0·max(0, w0−t).
func exhaustion(flows []flow, limit float64) time.Duration {
	var horizon float64
	for _, f := range flows {
		horizon = max(horizon, f.w0, f.w1)
	}
	const steps = 2000
	for i := 1; i <= steps; i++ {
		t := horizon * float64(i) / steps
		var inUse float64
		for _, f := range flows {
			inUse += f.rate1*min(t, f.w1) + f.rate0*max(0, f.w0-t)
		}
		if inUse >= limit {
			return time.Duration(t * float64(time.Second))
		}
	}
	return 0
}

// Meta returns the run metadata known before the run starts: identity,
// seed, status pending, timeouts, endpoints and pools with predictions.
// The runner fills in times, phases, faults and validity.
func (s *Spec) Meta(r Run) analysis.RunMeta {
	return analysis.RunMeta{
		Experiment: s.Name, ID: r.ID, Mode: r.Mode.Name, Condition: r.Condition.Name, Repeat: r.Repeat,
		Seed: r.Seed, Status: analysis.StatusPending,
		Timeout: s.Service.Timeout.D, ClientTimeout: s.Load.ClientTimeout.D, Window: s.Load.Window.D,
		Endpoints: s.Endpoints(r.Condition, r.Mode),
		Pools:     s.Preview(r.Condition, r.Mode),
	}
}
