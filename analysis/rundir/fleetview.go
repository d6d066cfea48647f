package rundir

import (
	"sort"
	"strings"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// A fleet's run (RunMeta.Instances) has no samples of
// rundata.ServiceComponent: each instance is a component of its own. The
// analysis reads the service from ServiceComponent, so Load adds the
// fleet's view under that name: per sampling tick, each series combined
// over the instances sampled at that tick (fleetCombine). Every rule and
// figure that reads the service then reads the fleet — a pool of a name is
// every instance's together, its limit N·L — and instanceView gives the
// same rules one instance at a time.

// fleetCombine is how a series of the instances' samples becomes the
// fleet's: "sum" (counts, gauges of things in use, limits, histograms'
// _sum and _count, GOMAXPROCS: the CPUs the fleet may use, against which
// its summed CPU seconds are judged), "max" (per-process levels that do
// not add up: a p99, a breaker's state and opening time), or "all" for a
// pool's or connection pool's exhausted-since time (the fleet's pool is
// exhausted once every instance's is: the latest of their times, 0 while
// one is not).
func fleetCombine(name string) string {
	switch {
	case strings.HasSuffix(name, "_p99"), name == rundata.MetricBreakerState, name == rundata.MetricBreakerOpenedAt:
		return "max"
	case name == rundata.MetricPoolExhaustedSince, name == rundata.MetricConnPoolExhaustedSince:
		return "all"
	}
	return "sum"
}

// addFleetView appends the fleet's ServiceComponent samples to a fleet's
// run, in time order; it does nothing for a run of one instance or one
// that already has service samples.
func addFleetView(r *Run) {
	if len(r.Meta.Instances) == 0 {
		return
	}
	inst := map[string]bool{}
	for _, c := range r.Meta.Instances {
		inst[c] = true
	}
	byTime := map[time.Time][]rundata.MetricSample{}
	var times []time.Time
	for _, s := range r.Metrics {
		if s.Component == rundata.ServiceComponent {
			return
		}
		if !inst[s.Component] {
			continue
		}
		if _, ok := byTime[s.Time]; !ok {
			times = append(times, s.Time)
		}
		byTime[s.Time] = append(byTime[s.Time], s)
	}
	for _, t := range times {
		r.Metrics = append(r.Metrics, combineSamples(t, byTime[t], len(r.Meta.Instances)))
	}
	sort.SliceStable(r.Metrics, func(i, j int) bool { return r.Metrics[i].Time.Before(r.Metrics[j].Time) })
}

// combineSamples is the fleet's sample at t from its n instances' samples.
func combineSamples(t time.Time, samples []rundata.MetricSample, n int) rundata.MetricSample {
	vals := map[string][]float64{}
	for _, s := range samples {
		for k, v := range s.Values {
			vals[k] = append(vals[k], v)
		}
	}
	out := rundata.MetricSample{Time: t, Component: rundata.ServiceComponent, Values: make(map[string]float64, len(vals))}
	for k, vs := range vals {
		name, _, _ := rundata.ParseKey(k)
		var sum, hi, lo float64 = 0, vs[0], vs[0]
		for _, v := range vs {
			sum, hi, lo = sum+v, max(hi, v), min(lo, v)
		}
		switch fleetCombine(name) {
		case "max":
			out.Values[k] = hi
		case "all":
			if len(vs) == n && lo > 0 {
				out.Values[k] = hi
			} else {
				out.Values[k] = 0 // an instance not sampled, or not exhausted
			}
		default:
			out.Values[k] = sum
		}
	}
	return out
}

// InstanceView is r as if instance comp (one of RunMeta.Instances) were
// the whole service: its samples under rundata.ServiceComponent, the
// fleet's and the other instances' left out, and each pool's limit, queue
// and predicted demand its share of the fleet's (the load is spread evenly
// over the n instances). Windows and phases stay the endpoint's; rates read
// from them are the fleet's, n times an instance's.
//
// A run of a process per pool (RunMeta.InstanceEndpoints) is not a fleet:
// each pool is one process's, whole, and that process had all of its
// endpoints' load. Its view keeps the pools of the endpoints it served, at
// their limits and predicted demand, and no other.
func InstanceView(r *Run, comp string) *Run {
	n := len(r.Meta.Instances)
	served, perPool := r.Meta.InstanceEndpoints[comp]
	if perPool {
		n = 1
	}
	v := *r
	v.Metrics = nil
	for _, s := range r.Metrics {
		switch {
		case s.Component == comp:
			s.Component = rundata.ServiceComponent
		case s.Component == rundata.ServiceComponent || rundata.IsInstanceComponent(s.Component):
			continue
		}
		v.Metrics = append(v.Metrics, s)
	}
	v.Meta.Instances = nil
	v.Meta.InstanceEndpoints = nil
	v.Meta.Pools = make([]rundata.PoolInfo, 0, len(r.Meta.Pools))
	for _, p := range r.Meta.Pools {
		if perPool && !servesAny(served, p.Endpoints) {
			continue
		}
		p.Limit /= n
		p.Queue /= n
		demand := map[string]float64{}
		for ph, d := range p.PredictedDemand {
			demand[ph] = d / float64(n)
		}
		p.PredictedDemand = demand
		v.Meta.Pools = append(v.Meta.Pools, p)
	}
	return &v
}

// servesAny reports whether any of a pool's endpoints is among served.
func servesAny(served, endpoints []string) bool {
	for _, e := range endpoints {
		for _, s := range served {
			if e == s {
				return true
			}
		}
	}
	return false
}
