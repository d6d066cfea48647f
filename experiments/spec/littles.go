package spec

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/service"
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

// HoldingTime is the expected time a call to dependency dep holds a permit
// under condition c (nil: no fault): the dependency's latency, changed by
// each fault for its share of calls as its type says (faultproxy.Hold: a
// delay adds its mean, errors and aborts end the call at once, a hang
// holds it until T); capped at T, where the service gives up.
func (s *Spec) HoldingTime(dep string, c *Condition) time.Duration {
	return s.holdingTime(dep, c, "")
}

// holdingTime is HoldingTime for the calls of endpoint ep ("": any): a
// fault with a match acts on the endpoint's calls only if its query
// matches (faultActsOn).
func (s *Spec) holdingTime(dep string, c *Condition, ep string) time.Duration {
	t := s.Service.Timeout.D
	base := s.Dependencies[dep].Latency.D
	if c == nil || c.Dependency != dep || len(c.Faults) == 0 {
		return min(base, t)
	}
	var w, share float64
	for _, f := range c.Faults {
		if !(postgresPart{s}).faultActsOn(f, ep) {
			continue
		}
		p := min(f.Percent/100, 1-share)
		share += p
		switch h := s.hold(f, dep); h.Kind {
		case faultproxy.HoldAdds:
			// A capacity fault's is its service time; the time a call
			// queues for a slot has no closed form here and is left out.
			w += p * float64(min(base+h.Mean, t))
		case faultproxy.HoldNever:
			w += p * float64(t)
		}
	}
	w += (1 - share) * float64(min(base, t))
	return time.Duration(w)
}

// EndpointInfos describes the endpoints of a run of condition c in mode m,
// with their fault-phase rates.
func (s *Spec) EndpointInfos(c *Condition, m *Mode) []rundata.EndpointInfo {
	r := s.FaultRates(c)
	pools := map[string]string{}
	for _, pl := range s.Pools(m) {
		for _, e := range pl.Endpoints {
			if !pl.Nested {
				pools[e] = pl.Name
			}
		}
	}
	out := make([]rundata.EndpointInfo, len(s.Endpoints))
	for i, e := range s.Endpoints {
		out[i] = rundata.EndpointInfo{Name: e.Name, Dependency: e.Dependency, Pool: pools[e.Name],
			Rate: r[e.Name], BaseLatency: s.Dependencies[e.Dependency].Latency.D}
		if rt := (clientsPart{s}).clientRetry(m, e.Name, 0); rt != nil {
			out[i].RetryAttempts = rt.Attempts
		}
		out[i].Tenant = tenantsPart{s}.tenantLabel(m, e) // tenants.go
		if s.External == nil && e.servicePath() != e.Name {
			out[i].Path = e.servicePath()
		}
	}
	return out
}

// Preview predicts, by Little's law, each pool's in-flight demand
// (Σ rate × holding time) in the baseline and fault phases of condition c
// in mode m, and the time from fault start until the pool is exhausted. In
// a fleet (InstancesOf(m) > 1) a pool is every instance's pool of that name
// together: its limit and queue are summed over the instances.
func (s *Spec) Preview(c *Condition, m *Mode) []rundata.PoolInfo {
	if info := s.sweep; info != nil {
		ps, om, oc, _ := info.pointFor(m.Name, c.Name)
		return ps.Preview(ps.condition(oc), ps.mode(om))
	}
	fr := s.FaultRates(c)
	var out []rundata.PoolInfo
	pools := s.Pools(m)
	// A fleet's pool of a name is every instance's together: the fleet's
	// load spread over n times the permits.
	n := s.InstancesOf(m)
	// An endpoint with a nested bulkhead holds at most its limit of the
	// layout's pool.
	nested := map[string]float64{}
	for _, pl := range pools {
		if pl.Nested {
			for _, e := range pl.Endpoints {
				nested[e] = float64(pl.Limit * n)
			}
		}
	}
	// A tenant stage holds each tenant to its partition or cap.
	caps := tenantsPart{s}.tenantCaps(m, fr, n) // tenants.go
	for _, pl := range pools {
		var base, fault float64
		var flows []flow
		// A sheddable endpoint of a pool with a reservation holds at most
		// its share of the unreserved permits (priority.go).
		shed := priorityPart{s}.sheddableCaps(m, pl, c)
		for _, e := range pl.Endpoints {
			dep := s.DependencyOf(e)
			wb, wf := s.holdingTime(dep, nil, e), s.holdingTime(dep, c, e)
			r0, r1 := s.Load.Rates[e], fr[e]
			f := flow{rate0: r0, w0: wb.Seconds(), rate1: r1, w1: wf.Seconds(), cap: math.Inf(1)}
			if l, ok := nested[e]; ok && !pl.Nested {
				f.cap = l
			}
			if l, ok := shed[e]; ok && !pl.Nested {
				f.cap = min(f.cap, l*float64(n))
			}
			if l, ok := caps[e]; ok && !pl.Nested {
				f.cap = min(f.cap, l)
			}
			base += min(r0*wb.Seconds(), f.cap)
			fault += min(r1*wf.Seconds(), f.cap)
			flows = append(flows, f)
		}
		ex := exhaustion(flows, float64(pl.Limit*n))
		// A burst of jobs that run on the request pools holds as many
		// permits as it has workers, from its arrival on (jobs.go).
		if jf, at, ok := (jobsPart{s}).jobsFlow(c, m, pl); ok {
			fault += jf.cap
			if ex == 0 {
				if e := exhaustion(append(flows, jf), float64(pl.Limit*n)); e > 0 {
					ex = at + e
				}
			}
		}
		out = append(out, rundata.PoolInfo{
			Name: pl.Name, Limit: pl.Limit * n, Queue: pl.Queue * n, MaxWait: s.Service.MaxWait.D, Endpoints: pl.Endpoints,
			PredictedDemand:     map[string]float64{rundata.PhaseBaseline: base, rundata.PhaseFault: fault},
			PredictedExhaustion: ex,
		})
	}
	return out
}

// flow is one endpoint's arrivals into a pool before and after fault
// start; it holds at most cap permits (a nested bulkhead; +Inf: none).
type flow struct{ rate0, w0, rate1, w1, cap float64 }

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
			inUse += min(f.rate1*min(t, f.w1)+f.rate0*max(0, f.w0-t), f.cap)
		}
		if inUse >= limit {
			return time.Duration(t * float64(time.Second))
		}
	}
	return 0
}

// BreakerOpening predicts, in closed form, when the breaker on each
// dependency of mode m opens after the fault of condition c starts. There
// is a closed form only for a count breaker of consecutive failures (of: 0)
// on a dependency whose every call fails from fault start (errors or
// aborts, or a delay that reaches the call's timeout) and is seen by the
// breaker as a failure it counts: then, with λ the calls per second to the
// dependency and F the failures that open it,
//
//   - errors:      F / λ;
//   - timeouts:    T_call + F / λ (the first calls after fault start end
//     at their timeout);
//   - rejections:  t_ex + Q / λ_pool + F / λ (the pool runs out at t_ex,
//     Little's law; its queue of Q then fills at the pool's arrival rate;
//     from then on each call is rejected at once),
//
// whichever comes first. Dependencies without a closed form are left out.
func (s *Spec) BreakerOpening(c *Condition, m *Mode) map[string]time.Duration {
	out := map[string]time.Duration{}
	rates := s.FaultRates(c)
	for dep, p := range m.Policies {
		b := p.Breaker
		if b == nil || (b.Kind != "" && b.Kind != service.BreakerCount) || b.Of != 0 || c.Dependency != dep {
			continue
		}
		on := b.On
		if on == nil {
			on = []string{service.OutcomeError, service.OutcomeTimeout}
		}
		var lambda float64
		var pool *rundata.PoolInfo
		pools := s.Preview(c, m)
		for _, e := range s.Endpoints {
			if e.Dependency != dep {
				continue
			}
			lambda += rates[e.Name]
			for i := range pools {
				if slices.Contains(pools[i].Endpoints, e.Name) {
					pool = &pools[i]
				}
			}
		}
		if lambda <= 0 {
			continue
		}
		callTimeout := s.Service.Timeout.D
		if p.Timeout.D > 0 {
			callTimeout = min(callTimeout, p.Timeout.D)
		}
		kind := s.everyCallFails(c, dep, callTimeout)
		f := float64(b.Failures) / lambda
		best := math.Inf(1)
		if kind == service.OutcomeError && slices.Contains(on, service.OutcomeError) {
			best = f
		}
		if kind == service.OutcomeTimeout && slices.Contains(on, service.OutcomeTimeout) {
			best = callTimeout.Seconds() + f
		}
		if kind == service.OutcomeTimeout && slices.Contains(on, service.OutcomeRejected) && pool != nil && pool.PredictedExhaustion > 0 {
			var poolRate float64
			for _, e := range pool.Endpoints {
				poolRate += rates[e]
			}
			best = min(best, pool.PredictedExhaustion.Seconds()+float64(pool.Queue)/poolRate+f)
		}
		if !math.IsInf(best, 1) {
			out[dep] = time.Duration(best * float64(time.Second))
		}
	}
	return out
}

// everyCallFails returns service.OutcomeError when every call to dep fails
// at once under c (errors, aborts), service.OutcomeTimeout when every call
// reaches callTimeout (a bounded delay at least that long, or a hang), and
// "" when some calls may succeed.
func (s *Spec) everyCallFails(c *Condition, dep string, callTimeout time.Duration) string {
	if c.Dependency != dep || len(c.Faults) == 0 {
		return ""
	}
	base := s.Dependencies[dep].Latency.D - s.Dependencies[dep].Jitter.D
	kind := ""
	var share float64
	for _, f := range c.Faults {
		k := ""
		switch h := s.hold(f, dep); {
		case h.Kind == faultproxy.HoldFails:
			k = service.OutcomeError
		case h.Kind == faultproxy.HoldNever, h.Kind == faultproxy.HoldAdds && h.Most != faultproxy.Unbounded && base+h.Least >= callTimeout:
			k = service.OutcomeTimeout
		default:
			return ""
		}
		if kind != "" && kind != k {
			return ""
		}
		kind = k
		if f.Percent == 0 {
			share += 100
		}
		share += f.Percent
	}
	if share < 100 {
		return ""
	}
	return kind
}
