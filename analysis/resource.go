package analysis

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// Resource names used in Exhaustion.Resource.
const (
	ResourcePool        = "pool"
	ResourceConnections = "connections"
	ResourceCPU         = "cpu"
	ResourceMemory      = "goroutines/memory"
	ResourceNone        = "none"
	// ResourceNotObservable: a user's service whose pools the harness
	// cannot see (no external.metrics).
	ResourceNotObservable = "not observable"
	// ResourcePoolInferred: a user's service without pool metrics whose
	// calls to a dependency hit a cap seen in the proxies' in-flight counts.
	ResourcePoolInferred = "pool (inferred)"
)

// ExhaustionRules documents how the exhausted resource is decided; the
// report prints it. Every rule is checked on the service's samples from fault
// start (run start without a fault) to the end of the fault phase, and the
// resource whose rule first holds is named; ties go in the listed order.
// For a service that exports its connection pools, ConnPoolRule replaces
// the connections rule here (and summaries list it; see exhaustionRules).
var ExhaustionRules = []string{
	"pool: in_use ≥ limit and (waiting ≥ queue limit or rejected_total rose since the previous sample)",
	"connections: dependency timeouts rose while the pool drawing on that dependency was below its limit (the call waited for something other than a permit)",
	"cpu: process_cpu_seconds_total rose at ≥ 90 % of the service's GOMAXPROCS (go_sched_gomaxprocs_threads, else meta versions num_cpu)",
	"goroutines/memory: go_goroutines ≥ 10× its pre-fault median and ≥ 1000, or resident memory ≥ 3× its pre-fault median",
	"none: no rule held",
	"pool (inferred): a user's service that exports no pool metrics, whose proxies' in-flight counts show a cap (" + InferenceRule + ")",
	"not observable: a user's service that exports no pool metrics (external.metrics names them) and whose proxies show no cap",
}

// Exhaustion names the bounded resource that ran out first in a run.
type Exhaustion struct {
	Resource string `json:"resource"`
	// AfterFaultS is when the rule first held, in seconds from fault start.
	AfterFaultS Num    `json:"after_fault_s"`
	Detail      string `json:"detail"`
}

type hit struct {
	res    string
	at     time.Time
	detail string
}

// exhaustion applies ExhaustionRules to the run.
func (r *Run) exhaustion(inferred []InferredLimit) Exhaustion {
	if r.Meta.External && !r.observesPools() {
		if len(inferred) > 0 {
			first := inferred[0]
			for _, l := range inferred[1:] {
				if l.AfterFaultS < first.AfterFaultS {
					first = l
				}
			}
			return Exhaustion{Resource: ResourcePoolInferred, AfterFaultS: first.AfterFaultS,
				Detail: "inferred from the proxies' in-flight counts: " + describeInferred(inferred) + " (the service exports no pool metrics)"}
		}
		return Exhaustion{Resource: ResourceNotObservable, AfterFaultS: nan,
			Detail: "the service's pools are invisible to the harness and no cap showed in the proxies' in-flight counts: name its pool metrics under external.metrics"}
	}
	from, ok := r.faultStart()
	if !ok {
		from = r.origin()
	}
	to := r.faultEnd()
	var hits []hit
	conn, measured := r.connHit, r.observesConnPools()
	if measured {
		conn = r.connPoolHit // measured: replaces the inference from timeouts
	}
	for _, f := range []func(time.Time, time.Time) (hit, bool){r.poolHit, conn, r.cpuHit, r.memHit} {
		if h, ok := f(from, to); ok {
			hits = append(hits, h)
		}
	}
	if len(hits) == 0 {
		return Exhaustion{Resource: ResourceNone, AfterFaultS: nan, Detail: "no rule held"}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].at.Before(hits[j].at) })
	h := hits[0]
	if measured {
		h.detail += tiedConnections(hits)
	}
	return Exhaustion{Resource: h.res, AfterFaultS: Num(h.at.Sub(from).Seconds()), Detail: h.detail}
}

func inRange(t, from, to time.Time) bool {
	return !t.Before(from) && (to.IsZero() || !t.After(to))
}

func (r *Run) poolHit(from, to time.Time) (hit, bool) {
	var best hit
	found := false
	for _, pool := range r.poolNames() {
		inUse := r.metric(rundata.ServiceComponent, poolKey(rundata.MetricPoolInUse, pool))
		limit := r.metric(rundata.ServiceComponent, poolKey(rundata.MetricPoolLimit, pool))
		waiting := r.metric(rundata.ServiceComponent, poolKey(rundata.MetricPoolWaiting, pool))
		qlimit := r.metric(rundata.ServiceComponent, poolKey(rundata.MetricPoolQueueLimit, pool))
		// Rejections by the pool itself; a client giving up (reason
		// cancelled) says nothing about the pool.
		rejFull := r.metricSum(rundata.ServiceComponent, rundata.MetricPoolRejected, rundata.L("pool", pool), rundata.L("reason", "full"))
		rejWait := r.metricSum(rundata.ServiceComponent, rundata.MetricPoolRejected, rundata.L("pool", pool), rundata.L("reason", "wait_timeout"))
		info := r.poolInfo(pool)
		for i, p := range inUse {
			if !inRange(p.t, from, to) || (found && !p.t.Before(best.at)) {
				continue
			}
			lim := orValue(limit, p.t, float64(info.Limit))
			if lim <= 0 || p.v < lim {
				continue
			}
			w, _ := valueAt(waiting, p.t)
			q := orValue(qlimit, p.t, float64(info.Queue))
			rose := false
			if i > 0 {
				d1, _ := deltaOver(rejFull, inUse[i-1].t, p.t)
				d2, _ := deltaOver(rejWait, inUse[i-1].t, p.t)
				rose = d1 > 0 || d2 > 0
			}
			if w >= q || rose {
				best = hit{ResourcePool, p.t, fmt.Sprintf("pool %s: in_use %s/%s, waiting %s/%s, rejections rising: %t",
					pool, fmtG(p.v), fmtG(lim), fmtG(w), fmtG(q), rose)}
				found = true
			}
		}
	}
	return best, found
}

func orValue(s []point, t time.Time, def float64) float64 {
	if v, ok := valueAt(s, t); ok {
		return v
	}
	return def
}

func (r *Run) connHit(from, to time.Time) (hit, bool) {
	var best hit
	found := false
	for _, e := range r.Meta.Endpoints {
		if e.Dependency == "" {
			continue
		}
		to2 := r.metric(rundata.ServiceComponent, rundata.Key(rundata.MetricDepRequests, rundata.L("dependency", e.Name), rundata.L("outcome", "timeout")))
		inUse := r.metric(rundata.ServiceComponent, poolKey(rundata.MetricPoolInUse, e.Pool))
		lim := r.poolInfo(e.Pool).Limit
		for i := 1; i < len(to2); i++ {
			p := to2[i]
			if !inRange(p.t, from, to) || p.v <= to2[i-1].v || (found && !p.t.Before(best.at)) {
				continue
			}
			u, ok := valueAt(inUse, p.t)
			limit := orValue(r.metric(rundata.ServiceComponent, poolKey(rundata.MetricPoolLimit, e.Pool)), p.t, float64(lim))
			if ok && u < limit {
				best = hit{ResourceConnections, p.t, fmt.Sprintf("dependency %s: timeouts rose by %s while pool %s had %s/%s in use",
					e.Dependency, fmtG(p.v-to2[i-1].v), e.Pool, fmtG(u), fmtG(limit))}
				found = true
			}
		}
	}
	return best, found
}

func (r *Run) cpuHit(from, to time.Time) (hit, bool) {
	cpu := r.metric(rundata.ServiceComponent, rundata.MetricCPUSeconds)
	procs := r.metric(rundata.ServiceComponent, rundata.MetricGoMaxProcs)
	def := 0.0
	if n, err := strconv.Atoi(r.Meta.Versions["num_cpu"]); err == nil {
		def = float64(n)
	}
	for i := 1; i < len(cpu); i++ {
		p := cpu[i]
		dt := p.t.Sub(cpu[i-1].t).Seconds()
		if !inRange(p.t, from, to) || dt <= 0 {
			continue
		}
		cores := orValue(procs, p.t, def)
		rate := (p.v - cpu[i-1].v) / dt
		if cores > 0 && rate >= 0.9*cores {
			return hit{ResourceCPU, p.t, fmt.Sprintf("service cpu %s cores of %s", fmtG(rate), fmtG(cores))}, true
		}
	}
	return hit{}, false
}

func (r *Run) memHit(from, to time.Time) (hit, bool) {
	check := func(key string, factor, floor float64) (hit, bool) {
		s := r.metric(rundata.ServiceComponent, key)
		var pre []float64
		for _, p := range s {
			if p.t.Before(from) {
				pre = append(pre, p.v)
			}
		}
		if len(pre) == 0 {
			return hit{}, false
		}
		sort.Float64s(pre)
		base := pre[len(pre)/2]
		for _, p := range s {
			if inRange(p.t, from, to) && p.v >= factor*base && p.v >= floor {
				name := strings.TrimPrefix(key, "process_")
				return hit{ResourceMemory, p.t, fmt.Sprintf("%s %s, %s× its pre-fault median %s", name, fmtG(p.v), fmtG(p.v/base), fmtG(base))}, true
			}
		}
		return hit{}, false
	}
	g, okG := check(rundata.MetricGoroutines, 10, 1000)
	m, okM := check(rundata.MetricResidentBytes, 3, 0)
	switch {
	case okG && (!okM || !m.at.Before(g.at)):
		return g, true
	case okM:
		return m, true
	}
	return hit{}, false
}

// poolStats compares Little's law with the measurement for one pool.
func (r *Run) poolStats(pool string) PoolStats {
	info := r.poolInfo(pool)
	st := PoolStats{Pool: pool, Limit: info.Limit, PredictedDemand: nan, MeasuredDemand: nan, DemandRatio: nan,
		PeakInUse: nan, PredictedExhaustionS: nan, MeasuredExhaustionS: nan, ExhaustionRatio: nan}
	phase := r.mainPhase()
	if d, ok := info.PredictedDemand[phase]; ok {
		st.PredictedDemand = Num(d)
	} else if r.Meta.External {
		// A user's pool, declared with its endpoints: predicted from the
		// holding times its proxies measured in the baseline.
		if pred, ok := r.proxyPrediction(info.Endpoints); ok {
			st.PredictedDemand = Num(pred[phase])
		}
	}
	if info.PredictedExhaustion > 0 {
		st.PredictedExhaustionS = Num(info.PredictedExhaustion.Seconds())
	}
	fs, hasFault := r.faultStart()
	if !hasFault {
		fs = r.origin()
	}
	fe := r.faultEnd()
	st.MeasuredDemand = Num(r.measuredDemand(info, fs, fe))
	st.DemandRatio = Num(ratio(float64(st.MeasuredDemand), float64(st.PredictedDemand)))
	inUse := r.metric(rundata.ServiceComponent, poolKey(rundata.MetricPoolInUse, pool))
	limit := r.metric(rundata.ServiceComponent, poolKey(rundata.MetricPoolLimit, pool))
	since := r.metric(rundata.ServiceComponent, poolKey(rundata.MetricPoolExhaustedSince, pool))
	if st.Limit == 0 { // not declared: what the service exports
		for _, p := range limit {
			st.Limit = max(st.Limit, int(p.v))
		}
	}
	peak := math.NaN()
	for _, p := range inUse {
		if !inRange(p.t, fs, fe) {
			continue
		}
		if math.IsNaN(peak) || p.v > peak {
			peak = p.v
		}
		lim := orValue(limit, p.t, float64(info.Limit))
		if hasFault && math.IsNaN(float64(st.MeasuredExhaustionS)) && lim > 0 && p.v >= lim {
			st.MeasuredExhaustionS = Num(exhaustedAfter(since, p.t, fs).Seconds())
		}
	}
	st.PeakInUse = Num(peak)
	st.ExhaustionRatio = Num(ratio(float64(st.MeasuredExhaustionS), float64(st.PredictedExhaustionS)))
	return st
}

// exhaustedAfter is how long after fault start fs the pool ran out, seen in
// the sample at t: exact when the service exports the moment its last free
// permit was taken (bulkhead_pool_exhausted_since_seconds), else the sample
// time (the sampling resolution). An exhaustion that began before the fault
// counts as 0.
func exhaustedAfter(since []point, t, fs time.Time) time.Duration {
	if v, ok := valueAt(since, t); ok && v > 0 {
		at := time.Unix(0, int64(v*1e9))
		if !at.After(t) {
			return max(0, at.Sub(fs))
		}
	}
	return t.Sub(fs)
}

// measuredDemand is Σ λ·W over the pool's endpoints between from and to.
func (r *Run) measuredDemand(info rundata.PoolInfo, from, to time.Time) float64 {
	phase := r.mainPhase()
	secs := to.Sub(from).Seconds()
	if secs <= 0 || len(info.Endpoints) == 0 { // a pool seen only in a user's metrics
		return math.NaN()
	}
	total := 0.0
	for _, ep := range info.Endpoints {
		ps, ok := r.phaseSummary(ep, phase)
		if !ok {
			ps = r.mergeWindows(ep, phase)
		}
		lambda := float64(ps.Counts.Total()) / secs
		if lambda == 0 {
			continue
		}
		w := math.NaN()
		// The service labels its dependency calls by the endpoint that makes them.
		sum := r.metric(rundata.ServiceComponent, rundata.Key(rundata.MetricDepDurationSum, rundata.L("dependency", ep)))
		cnt := r.metric(rundata.ServiceComponent, rundata.Key(rundata.MetricDepDurationCount, rundata.L("dependency", ep)))
		ds, ok1 := deltaOver(sum, from, to)
		dc, ok2 := deltaOver(cnt, from, to)
		if ok1 && ok2 && dc > 0 {
			w = ds / dc
		} else if ps.LatencyOK.Count > 0 {
			w = ps.LatencyOK.Mean.Seconds()
		}
		if math.IsNaN(w) {
			return math.NaN()
		}
		total += lambda * w
	}
	return total
}

// observesPools reports whether the service's samples hold pool metrics.
func (r *Run) observesPools() bool {
	for _, s := range r.Metrics {
		if s.Component == rundata.ServiceComponent && len(rundata.LabelValues(s.Values, rundata.MetricPoolInUse, "pool")) > 0 {
			return true
		}
	}
	return false
}
