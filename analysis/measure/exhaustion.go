package measure

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// Resource names used in Exhaustion.Resource and ResourceHit.Resource.
const (
	ResourcePool        = "pool"
	ResourceQueue       = "queue"
	ResourceConnections = "connections"
	// ResourceCapacity: a dependency serving at its capacity with requests
	// queued (a stub's capacity, or a proxy's capacity fault).
	ResourceCapacity = "dependency capacity"
	ResourceCPU      = "cpu"
	ResourceGC       = "gc"
	ResourceMemory   = "goroutines/memory"
	ResourceNone     = "none"
	// ResourceNotObservable: a user's service whose pools the harness
	// cannot see (no external.metrics).
	ResourceNotObservable = "not observable"
	// ResourcePoolInferred: a user's service without pool metrics whose
	// calls to a dependency hit a cap seen in the proxies' in-flight counts.
	ResourcePoolInferred = "pool (inferred)"
)

// ExhaustionRules documents how the exhausted resources are decided; the
// report prints it. Every rule is checked on the samples from fault start
// (run start without a fault) to the end of the fault phase, for every
// bounded resource it covers (each pool, connection pool, dependency); the
// resources whose rule held are ranked by when it first held, and the first
// is named; ties go in the listed order. A time is exact where the service
// exports when the resource ran out (a pool's or connection pool's
// exhausted_since), else the sample's (the sampling resolution).
// For a service that exports its connection pools, ConnPoolRule replaces
// the connections rule here (and summaries list it; see exhaustionRules).
var ExhaustionRules = []string{
	"pool: in_use ≥ limit and (waiting ≥ queue limit or rejected_total rose since the previous sample)",
	"queue: a pool with a queue has waiting ≥ its queue limit (callers beyond it are turned away)",
	"connections: dependency timeouts rose while the pool drawing on that dependency was below its limit (the call waited for something other than a permit)",
	"dependency capacity: a dependency with finite capacity (a stub's capacity or a proxy's capacity fault) served at its capacity with requests queued",
	"cpu: process_cpu_seconds_total rose at ≥ 90 % of the service's GOMAXPROCS (go_sched_gomaxprocs_threads, else meta versions num_cpu)",
	"goroutines/memory: go_goroutines ≥ 10× its pre-fault median and ≥ 1000, or resident memory ≥ 3× its pre-fault median",
	"none: no rule held",
	"pool (inferred): a user's service that exports no pool metrics, whose proxies' in-flight counts show a cap (" + InferenceRule + ")",
	"not observable: a user's service that exports no pool metrics (external.metrics names them) and whose proxies show no cap",
}

// Exhaustion names the bounded resource that ran out first in a run and
// ranks every one that ran out.
type Exhaustion struct {
	Resource string `json:"resource"`
	// AfterFaultS is when the rule first held, in seconds from fault start.
	AfterFaultS Num    `json:"after_fault_s"`
	Detail      string `json:"detail"`
	// Ranked is every bounded resource whose rule held, in the order they
	// ran out (the first is the one named above); empty when none did or
	// the service's resources are not observable.
	Ranked []ResourceHit `json:"ranked,omitempty"`
	// PoolFirst says whether the resource named is the service's pool
	// (PoolFirstRule): yes, no or unknown, and PoolFirstWhy why not or why
	// it cannot be told.
	PoolFirst    string `json:"pool_first,omitempty"`
	PoolFirstWhy string `json:"pool_first_why,omitempty"`
}

// ResourceHit is one bounded resource that ran out, with its evidence.
type ResourceHit struct {
	Resource string `json:"resource"`
	// Name is the pool, connection pool or dependency; empty for the
	// process-wide resources (cpu, goroutines/memory).
	Name        string `json:"name,omitempty"`
	AfterFaultS Num    `json:"after_fault_s"`
	// Exact: the time is the service's own record of the moment, not the
	// sample's.
	Exact  bool   `json:"exact,omitempty"`
	Detail string `json:"detail"`
	// Leaked marks a pool that the fault left with permits taken
	// (LeakRule): it ran out of permits it had lost, not of calls.
	Leaked bool `json:"leaked,omitempty"`
}

// Label renders the hit as "pool a", "pool a (leaked)", "cpu".
func (h ResourceHit) Label() string {
	l := h.Resource
	if h.Name != "" {
		l += " " + h.Name
	}
	if h.Leaked {
		l += " (leaked)"
	}
	return l
}

// Label names the resource that ran out first as its hit does ("pool a
// (leaked)"), else by its kind.
func (e Exhaustion) Label() string {
	if len(e.Ranked) > 0 {
		return e.Ranked[0].Label()
	}
	return e.Resource
}

// markLeaked marks the exhausted pools that leaked permits.
func (e *Exhaustion) markLeaked(l *RunLeaks) {
	if l == nil {
		return
	}
	for _, p := range l.Pools {
		if p.Leaked == 0 || p.Source != LeakFromMetrics {
			continue
		}
		for i := range e.Ranked {
			if h := &e.Ranked[i]; h.Resource == ResourcePool && h.Name == p.Pool {
				h.Leaked = true
				h.Detail += fmt.Sprintf("; %d of its permits were never given back", p.Leaked)
			}
		}
	}
	if len(e.Ranked) > 0 && e.Ranked[0].Leaked {
		e.Detail = e.Ranked[0].Detail
	}
}

// Then lists the resources that ran out after the first, in order: "queue
// a 0.25, connections shared 0.31*" (* an exact time).
func (e Exhaustion) Then() string {
	if len(e.Ranked) < 2 {
		return ""
	}
	var parts []string
	for _, h := range e.Ranked[1:] {
		parts = append(parts, h.Label()+" "+h.after())
	}
	return strings.Join(parts, ", ")
}

// After renders when the first resource ran out, "0.0256*" when exact.
func (e Exhaustion) After() string {
	if len(e.Ranked) == 0 {
		return FmtNum(e.AfterFaultS)
	}
	return e.Ranked[0].after()
}

// after renders AfterFaultS, with * when the time is exact.
func (h ResourceHit) after() string {
	if h.Exact {
		return FmtNum(h.AfterFaultS) + "*"
	}
	return FmtNum(h.AfterFaultS)
}

type hit struct {
	res    string
	at     time.Time
	detail string
	name   string
	exact  bool
	// explainedBy: an inferred hit that says nothing once a pool of this
	// endpoint has run out (timeouts of calls it let through are no longer
	// a sign of another limit).
	explainedBy string
}

// exhaustionScan finds which resource ran out first over the fault phase, and
// ranks the hits.
type exhaustionScan struct{ run *rundir.Run }

// exhaustion applies ExhaustionRules to the run.
func (es exhaustionScan) exhaustion(inferred []InferredLimit) Exhaustion {
	if es.run.Meta.External && !observesPools(es.run) && observesConnPools(es.run) {
		return es.rank(es.connOnlyHits(inferred))
	}
	if es.run.Meta.External && !observesPools(es.run) {
		if len(inferred) > 0 {
			first := inferred[0]
			for _, l := range inferred[1:] {
				if l.AfterFaultS < first.AfterFaultS {
					first = l
				}
			}
			return Exhaustion{Resource: ResourcePoolInferred, AfterFaultS: first.AfterFaultS,
				Detail: "inferred from the proxies' in-flight counts: " + DescribeInferred(inferred) + " (the service exports no pool metrics)"}
		}
		return Exhaustion{Resource: ResourceNotObservable, AfterFaultS: Undefined,
			Detail: "the service's pools are invisible to the harness and no cap showed in the proxies' in-flight counts: name its pool metrics under external.metrics"}
	}
	return es.rank(es.resourceHits(fromTo(es.run)))
}

// fromTo is the span the rules are checked over: fault start (run start
// without a fault) to the end of the fault phase.
func fromTo(run *rundir.Run) (time.Time, time.Time) {
	from, ok := run.FaultStart()
	if !ok {
		from = run.Origin()
	}
	return from, run.FaultEnd()
}

// connOnlyHits ranks a user's service that exports its connection pools
// but not its worker pools: the measured connections, CPU and memory
// rules, and the limits inferred from the proxies as pool (inferred).
func (es exhaustionScan) connOnlyHits(inferred []InferredLimit) []hit {
	from, to := fromTo(es.run)
	hits := es.resourceHits(from, to)
	for _, l := range inferred {
		if math.IsNaN(float64(l.AfterFaultS)) {
			continue
		}
		hits = append(hits, hit{res: ResourcePoolInferred, at: from.Add(time.Duration(float64(l.AfterFaultS) * float64(time.Second))),
			detail: "inferred from the proxies' in-flight counts: " + DescribeInferred([]InferredLimit{l}) + " (the service exports no pool metrics)"})
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].at.Before(hits[j].at) })
	return hits
}

// rank turns the hits, sorted by time, into the exhaustion of the run.
func (es exhaustionScan) rank(hits []hit) Exhaustion {
	from, _ := fromTo(es.run)
	if len(hits) == 0 {
		return Exhaustion{Resource: ResourceNone, AfterFaultS: Undefined, Detail: "no rule held"}
	}
	ex := Exhaustion{}
	for _, h := range hits {
		ex.Ranked = append(ex.Ranked, ResourceHit{Resource: h.res, Name: h.name, AfterFaultS: Num(h.at.Sub(from).Seconds()), Exact: h.exact, Detail: h.detail})
	}
	h := hits[0]
	if observesConnPools(es.run) {
		h.detail += tiedConnections(hits)
	}
	ex.Resource, ex.AfterFaultS, ex.Detail = h.res, Num(h.at.Sub(from).Seconds()), h.detail
	return ex
}

// resourceHits applies every rule in [from, to]: the first hit of each
// resource, ranked by time (ties in the order of ExhaustionRules).
func (es exhaustionScan) resourceHits(from, to time.Time) []hit {
	conn := es.connHit
	if observesConnPools(es.run) {
		conn = connPools{es.run}.connPoolHits // measured: replaces the inference from timeouts
	}
	var hits []hit
	for _, f := range []func(time.Time, time.Time) []hit{es.poolHits, es.queueHits, conn, es.capacityHits, one(cpuSeries{es.run}.cpuAnyHit), one(cpuSeries{es.run}.gcHit), one(es.memHit)} {
		hits = append(hits, f(from, to)...)
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].at.Before(hits[j].at) })
	ran := map[string]bool{}
	out := hits[:0]
	for _, h := range hits {
		if h.explainedBy != "" && ran[h.explainedBy] {
			continue
		}
		if h.res == ResourcePool {
			for _, ep := range es.run.PoolInfo(h.name).Endpoints {
				ran[ep] = true
			}
		}
		out = append(out, h)
	}
	return out
}

// one adapts a rule of one process-wide resource to the list of hits.
func one(f func(time.Time, time.Time) (hit, bool)) func(time.Time, time.Time) []hit {
	return func(from, to time.Time) []hit {
		if h, ok := f(from, to); ok {
			return []hit{h}
		}
		return nil
	}
}

func inRange(t, from, to time.Time) bool {
	return !t.Before(from) && (to.IsZero() || !t.After(to))
}

// poolHits applies the pool rule to every pool: its first hit, at the
// moment its last free permit was taken where the service exports it.
func (es exhaustionScan) poolHits(from, to time.Time) []hit {
	var hits []hit
	for _, pool := range es.run.PoolNames() {
		inUse := es.run.Metric(rundata.ServiceComponent, rundir.PoolKey(rundata.MetricPoolInUse, pool))
		limit := es.run.Metric(rundata.ServiceComponent, rundir.PoolKey(rundata.MetricPoolLimit, pool))
		waiting := es.run.Metric(rundata.ServiceComponent, rundir.PoolKey(rundata.MetricPoolWaiting, pool))
		qlimit := es.run.Metric(rundata.ServiceComponent, rundir.PoolKey(rundata.MetricPoolQueueLimit, pool))
		since := es.run.Metric(rundata.ServiceComponent, rundir.PoolKey(rundata.MetricPoolExhaustedSince, pool))
		// Rejections by the pool itself; a client giving up (reason
		// cancelled) says nothing about the pool.
		rejFull := es.run.MetricSum(rundata.ServiceComponent, rundata.MetricPoolRejected, rundata.L("pool", pool), rundata.L("reason", "full"))
		rejWait := es.run.MetricSum(rundata.ServiceComponent, rundata.MetricPoolRejected, rundata.L("pool", pool), rundata.L("reason", "wait_timeout"))
		info := es.run.PoolInfo(pool)
		for i, p := range inUse {
			if !inRange(p.Time, from, to) {
				continue
			}
			lim := orValue(limit, p.Time, float64(info.Limit))
			if lim <= 0 || p.Value < lim {
				continue
			}
			w, _ := rundir.ValueAt(waiting, p.Time)
			q := orValue(qlimit, p.Time, float64(info.Queue))
			rose := false
			if i > 0 {
				d1, _ := rundir.DeltaOver(rejFull, inUse[i-1].Time, p.Time)
				d2, _ := rundir.DeltaOver(rejWait, inUse[i-1].Time, p.Time)
				rose = d1 > 0 || d2 > 0
			}
			if w >= q || rose {
				at, exact := exactAt(since, p.Time, from)
				waits := fmt.Sprintf("waiting %s/%s", FmtG(w), FmtG(q))
				if q <= 0 {
					// No queue: a waiting count is not against one.
					waits = "no queue, waiting " + FmtG(w)
				}
				hits = append(hits, hit{ResourcePool, at, fmt.Sprintf("pool %s: in_use %s/%s, %s, rejections rising: %t",
					pool, FmtG(p.Value), FmtG(lim), waits, rose), pool, exact, ""})
				break
			}
		}
	}
	return hits
}

// exactAt is when a resource seen exhausted in the sample at t ran out: the
// service's own mark in since (Unix seconds; no earlier than from, no later
// than t) where it exports one, else t.
func exactAt(since []rundir.Point, t, from time.Time) (time.Time, bool) {
	if v, ok := rundir.ValueAt(since, t); ok && v > 0 {
		at := time.Unix(0, int64(v*1e9))
		if !at.After(t) {
			if at.Before(from) {
				at = from
			}
			return at, true
		}
	}
	return t, false
}

// queueHits applies the queue rule: the first sample at which a pool with a
// queue had it full.
func (es exhaustionScan) queueHits(from, to time.Time) []hit {
	var hits []hit
	for _, pool := range es.run.PoolNames() {
		waiting := es.run.Metric(rundata.ServiceComponent, rundir.PoolKey(rundata.MetricPoolWaiting, pool))
		qlimit := es.run.Metric(rundata.ServiceComponent, rundir.PoolKey(rundata.MetricPoolQueueLimit, pool))
		info := es.run.PoolInfo(pool)
		for _, p := range waiting {
			q := orValue(qlimit, p.Time, float64(info.Queue))
			if inRange(p.Time, from, to) && q > 0 && p.Value >= q {
				hits = append(hits, hit{ResourceQueue, p.Time, fmt.Sprintf("queue of pool %s: waiting %s/%s", pool, FmtG(p.Value), FmtG(q)), pool, false, ""})
				break
			}
		}
	}
	return hits
}

func orValue(s []rundir.Point, t time.Time, def float64) float64 {
	if v, ok := rundir.ValueAt(s, t); ok {
		return v
	}
	return def
}

// connHit infers connections from timeouts (a service that exports no
// connection pools): the first sample at which a dependency's timeouts rose
// while its worker pool was below its limit.
func (es exhaustionScan) connHit(from, to time.Time) []hit {
	var best hit
	found := false
	for _, e := range es.run.Meta.Endpoints {
		if e.Dependency == "" {
			continue
		}
		to2 := es.run.Metric(rundata.ServiceComponent, rundata.Key(rundata.MetricDepRequests, rundata.L("dependency", e.Name), rundata.L("outcome", "timeout")))
		inUse := es.run.Metric(rundata.ServiceComponent, rundir.PoolKey(rundata.MetricPoolInUse, e.Pool))
		lim := es.run.PoolInfo(e.Pool).Limit
		for i := 1; i < len(to2); i++ {
			p := to2[i]
			if !inRange(p.Time, from, to) || p.Value <= to2[i-1].Value || (found && !p.Time.Before(best.at)) {
				continue
			}
			u, ok := rundir.ValueAt(inUse, p.Time)
			limit := orValue(es.run.Metric(rundata.ServiceComponent, rundir.PoolKey(rundata.MetricPoolLimit, e.Pool)), p.Time, float64(lim))
			if ok && u < limit {
				best = hit{ResourceConnections, p.Time, fmt.Sprintf("dependency %s: timeouts rose by %s while pool %s had %s/%s in use",
					e.Dependency, FmtG(p.Value-to2[i-1].Value), e.Pool, FmtG(u), FmtG(limit)), e.Dependency, false, e.Name}
				found = true
			}
		}
	}
	if !found {
		return nil
	}
	return []hit{best}
}

func (es exhaustionScan) cpuHit(from, to time.Time) (hit, bool) {
	cpu := es.run.Metric(rundata.ServiceComponent, rundata.MetricCPUSeconds)
	procs := es.run.Metric(rundata.ServiceComponent, rundata.MetricGoMaxProcs)
	def := 0.0
	if n, err := strconv.Atoi(es.run.Meta.Versions["num_cpu"]); err == nil {
		def = float64(n)
	}
	for i := 1; i < len(cpu); i++ {
		p := cpu[i]
		dt := p.Time.Sub(cpu[i-1].Time).Seconds()
		if !inRange(p.Time, from, to) || dt <= 0 {
			continue
		}
		cores := orValue(procs, p.Time, def)
		rate := (p.Value - cpu[i-1].Value) / dt
		if cores > 0 && rate >= 0.9*cores {
			return hit{res: ResourceCPU, at: p.Time, detail: fmt.Sprintf("service cpu %s cores of %s", FmtG(rate), FmtG(cores))}, true
		}
	}
	return hit{}, false
}

func (es exhaustionScan) memHit(from, to time.Time) (hit, bool) {
	check := func(key string, factor, floor float64) (hit, bool) {
		s := es.run.Metric(rundata.ServiceComponent, key)
		var pre []float64
		for _, p := range s {
			if p.Time.Before(from) {
				pre = append(pre, p.Value)
			}
		}
		if len(pre) == 0 {
			return hit{}, false
		}
		sort.Float64s(pre)
		base := pre[len(pre)/2]
		for _, p := range s {
			if inRange(p.Time, from, to) && p.Value >= factor*base && p.Value >= floor {
				name := strings.TrimPrefix(key, "process_")
				return hit{res: ResourceMemory, at: p.Time, detail: fmt.Sprintf("%s %s, %s× its pre-fault median %s", name, FmtG(p.Value), FmtG(p.Value/base), FmtG(base))}, true
			}
		}
		return hit{}, false
	}
	g, okG := check(rundata.MetricGoroutines, 10, 1000)
	m, okM := check(rundata.MetricResidentBytes, 3, 0)
	return earlier(g, okG, m, okM)
}

// littlesLaw compares a pool's demand predicted by Little's law with the
// measured one.
type littlesLaw struct{ run *rundir.Run }

// poolStats compares Little's law with the measurement for one pool.
func (ll littlesLaw) poolStats(pool string) PoolStats {
	info := ll.run.PoolInfo(pool)
	st := PoolStats{Pool: pool, Limit: info.Limit, PredictedDemand: Undefined, MeasuredDemand: Undefined, DemandRatio: Undefined,
		PeakInUse: Undefined, PredictedExhaustionS: Undefined, MeasuredExhaustionS: Undefined, ExhaustionRatio: Undefined}
	phase := mainPhase(ll.run)
	if d, ok := info.PredictedDemand[phase]; ok {
		st.PredictedDemand = Num(d)
	} else if ll.run.Meta.External {
		// A user's pool, declared with its endpoints: predicted from the
		// holding times its proxies measured in the baseline.
		if pred, ok := (proxyLatency{ll.run}).proxyPrediction(info.Endpoints); ok {
			st.PredictedDemand = Num(pred[phase])
		}
	}
	if info.PredictedExhaustion > 0 {
		st.PredictedExhaustionS = Num(info.PredictedExhaustion.Seconds())
	}
	fs, hasFault := ll.run.FaultStart()
	if !hasFault {
		fs = ll.run.Origin()
	}
	fe := ll.run.FaultEnd()
	st.MeasuredDemand = Num(ll.measuredDemand(info, fs, fe))
	st.DemandRatio = Num(Ratio(float64(st.MeasuredDemand), float64(st.PredictedDemand)))
	inUse := ll.run.Metric(rundata.ServiceComponent, rundir.PoolKey(rundata.MetricPoolInUse, pool))
	limit := ll.run.Metric(rundata.ServiceComponent, rundir.PoolKey(rundata.MetricPoolLimit, pool))
	since := ll.run.Metric(rundata.ServiceComponent, rundir.PoolKey(rundata.MetricPoolExhaustedSince, pool))
	if st.Limit == 0 { // not declared: what the service exports
		for _, p := range limit {
			st.Limit = max(st.Limit, int(p.Value))
		}
	}
	peak := math.NaN()
	for _, p := range inUse {
		if !inRange(p.Time, fs, fe) {
			continue
		}
		if math.IsNaN(peak) || p.Value > peak {
			peak = p.Value
		}
		lim := orValue(limit, p.Time, float64(info.Limit))
		if hasFault && math.IsNaN(float64(st.MeasuredExhaustionS)) && lim > 0 && p.Value >= lim {
			st.MeasuredExhaustionS = Num(exhaustedAfter(since, p.Time, fs).Seconds())
		}
	}
	st.PeakInUse = Num(peak)
	st.ExhaustionRatio = Num(Ratio(float64(st.MeasuredExhaustionS), float64(st.PredictedExhaustionS)))
	return st
}

// exhaustedAfter is how long after fault start fs the pool ran out, seen in
// the sample at t: exact when the service exports the moment its last free
// permit was taken (bulkhead_pool_exhausted_since_seconds), else the sample
// time (the sampling resolution). An exhaustion that began before the fault
// counts as 0.
func exhaustedAfter(since []rundir.Point, t, fs time.Time) time.Duration {
	at, _ := exactAt(since, t, fs)
	return at.Sub(fs)
}

// measuredDemand is Σ λ·W over the pool's endpoints between from and to.
func (ll littlesLaw) measuredDemand(info rundata.PoolInfo, from, to time.Time) float64 {
	phase := mainPhase(ll.run)
	secs := to.Sub(from).Seconds()
	if secs <= 0 || len(info.Endpoints) == 0 { // a pool seen only in a user's metrics
		return math.NaN()
	}
	total := 0.0
	for _, ep := range info.Endpoints {
		ps, ok := ll.run.PhaseSummary(ep, phase)
		if !ok {
			ps = endpointWindows{ll.run}.mergeWindows(ep, phase)
		}
		// Requests its tenant's share refused never reached the pool.
		lambda := (float64(ps.Counts.Total()) - tenantRefused(ll.run, ep, from, to)) / secs
		if lambda <= 0 {
			continue
		}
		w := math.NaN()
		// The service labels its dependency calls by the endpoint that
		// makes them: its own, which load classes may share (tenants.go).
		l := rundata.L("dependency", serviceEndpoint(ll.run, ep))
		sum := ll.run.Metric(rundata.ServiceComponent, rundata.Key(rundata.MetricDepDurationSum, l))
		cnt := ll.run.Metric(rundata.ServiceComponent, rundata.Key(rundata.MetricDepDurationCount, l))
		ds, ok1 := rundir.DeltaOver(sum, from, to)
		dc, ok2 := rundir.DeltaOver(cnt, from, to)
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
func observesPools(run *rundir.Run) bool { return observes(run, rundata.MetricPoolInUse) }

// observes reports whether any of the service's samples has a series of
// the pool metric name (labelled pool).
func observes(run *rundir.Run, name string) bool {
	for _, s := range run.Metrics {
		if s.Component == rundata.ServiceComponent && len(rundata.LabelValues(s.Values, name, "pool")) > 0 {
			return true
		}
	}
	return false
}
