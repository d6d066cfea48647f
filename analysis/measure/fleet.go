package measure

import (
	"math"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// InstanceStats are one instance's numbers in a run of a fleet: the same
// pool statistics (Little's law with the instance's share of the load,
// peak in use against the instance's limit) and exhausted-resource rules
// as a service of one instance, applied to the instance alone.
type InstanceStats struct {
	Instance string `json:"instance"`
	// Endpoints, for a process per pool (RunMeta.InstanceEndpoints), are
	// the endpoints it served; empty for an instance of a fleet (each
	// served every endpoint).
	Endpoints []string    `json:"endpoints,omitempty"`
	Pools     []PoolStats `json:"pools"`
	Exhausted Exhaustion  `json:"exhausted"`
}

// PerPool reports whether every instance of the stats is a process per
// pool, none an instance of a fleet.
func PerPool(stats []InstanceStats) bool {
	for _, s := range stats {
		if len(s.Endpoints) == 0 {
			return false
		}
	}
	return len(stats) > 0
}

// fleetFamily adds each instance's numbers of a fleet's run and, when the
// experiment names fleet claims, what the fleet put on the culprit's
// dependency.
func fleetFamily(r *rundir.Run, s *RunSummary, ex rundata.Expectations) {
	s.Instances = fleet{r}.instanceStats()
	if ex.Fleet != nil {
		s.Fleet = fleet{r}.fleetStats(ex, s.Endpoint(ex.Culprit))
	}
}

// fleet reads each instance of a fleet and what the fleet put on the
// culprit's dependency.
type fleet struct{ run *rundir.Run }

// instanceStats computes every instance's numbers of a fleet's run; nil for
// a run of one instance.
func (fl fleet) instanceStats() []InstanceStats {
	n := len(fl.run.Meta.Instances)
	if n == 0 {
		return nil
	}
	out := make([]InstanceStats, 0, n)
	for _, c := range fl.run.Meta.Instances {
		v := rundir.InstanceView(fl.run, c)
		st := InstanceStats{Instance: c}
		share := n
		if eps, perPool := fl.run.Meta.InstanceEndpoints[c]; perPool {
			share = 1 // a process per pool had all of its endpoints' load
			st.Endpoints = eps
		}
		for _, p := range v.PoolNames() {
			ps := littlesLaw{v}.poolStats(p)
			// The endpoints' rates are the fleet's: an instance gets 1/n.
			ps.MeasuredDemand /= Num(share)
			ps.DemandRatio = Num(Ratio(float64(ps.MeasuredDemand), float64(ps.PredictedDemand)))
			st.Pools = append(st.Pools, ps)
		}
		st.Exhausted = exhaustionScan{v}.exhaustion(nil)
		out = append(out, st)
	}
	return out
}

// FleetRun is what a run's fleet put on the culprit's dependency, against
// Little's law: N instances with a bulkhead of L each hold up to N·L calls
// to a dependency of capacity C (servers) and service time s, so they put
// K = min(N·L, λ·W) calls on it, and a call spends W = s·max(1, K/C) there
// (FIFO queueing once K > C). Every number is over the fault phase.
type FleetRun struct {
	Instances int `json:"instances"`
	// Dependency is the culprit's dependency; Pool the culprit's smallest
	// pool and PerInstanceLimit (L) its limit in one instance.
	Dependency       string `json:"dependency"`
	Pool             string `json:"pool"`
	PerInstanceLimit int    `json:"per_instance_limit"`
	// FleetLimit is N·L.
	FleetLimit int `json:"fleet_limit"`
	// Capacity is C, the stub's servers (null: unlimited or not sampled);
	// ServiceMs is s, the dependency's latency when not queueing.
	Capacity  Num `json:"capacity"`
	ServiceMs Num `json:"service_ms"`
	// OfferedPerS is λ: the culprit's requests per second.
	OfferedPerS Num `json:"offered_per_s"`
	// ConcurrencyOnDep is the mean of the proxy's in-flight count: the
	// calls the fleet had on the dependency. DepInService and DepWaiting
	// are the stub's own means: calls served and calls queued.
	ConcurrencyOnDep Num `json:"concurrency_on_dep"`
	// ConcurrencyOnDepSE is the standard error of that mean (the samples'
	// standard deviation over √n): a gauge read every sampling interval
	// over a short fault phase is a handful of samples of a small count
	// (8 over 2 s), and that alone can move its mean by a tenth of K.
	// Undefined with fewer than 2 samples.
	ConcurrencyOnDepSE Num `json:"concurrency_on_dep_se"`
	DepInService       Num `json:"dep_in_service"`
	DepWaiting         Num `json:"dep_waiting"`
	// FleetInUse is the mean of the culprit pool's permits in use, summed
	// over the instances.
	FleetInUse Num `json:"fleet_in_use"`
	// PredictedConcurrency is K; PredictedWaitMs is W (not capped at T).
	PredictedConcurrency Num `json:"predicted_concurrency"`
	PredictedWaitMs      Num `json:"predicted_wait_ms"`
	// MeasuredWaitMs is the mean duration of the culprit's dependency
	// calls, as the instances timed them (capped at T by the timeout).
	MeasuredWaitMs Num `json:"measured_wait_ms"`
	// DepFailedShare is the share of the culprit's results that the
	// dependency failed (timeouts and errors); RejectedShare the share the
	// instances' own policies refused; OKPerS its successes per second.
	DepFailedShare Num `json:"dep_failed_share"`
	RejectedShare  Num `json:"rejected_share"`
	OKPerS         Num `json:"ok_per_s"`
}

// fleetStats computes the run's FleetRun for the culprit ex.Culprit.
func (fl fleet) fleetStats(ex rundata.Expectations, culprit EndpointStats) *FleetRun {
	info := fl.run.EndpointInfo(ex.Culprit)
	n := max(1, len(fl.run.Meta.Instances))
	f := &FleetRun{Instances: n, Dependency: info.Dependency, Capacity: Undefined, ServiceMs: Num(Millis(info.BaseLatency)),
		OfferedPerS: Undefined, ConcurrencyOnDep: Undefined, ConcurrencyOnDepSE: Undefined, DepInService: Undefined, DepWaiting: Undefined, FleetInUse: Undefined,
		PredictedConcurrency: Undefined, PredictedWaitMs: Undefined, MeasuredWaitMs: Undefined, DepFailedShare: Undefined,
		RejectedShare: RejectedShare(culprit), OKPerS: culprit.FaultOKRate}
	for _, p := range fl.run.Meta.Pools {
		if containsString(p.Endpoints, ex.Culprit) && (f.Pool == "" || p.Limit < f.FleetLimit) {
			f.Pool, f.FleetLimit = p.Name, p.Limit
		}
	}
	f.PerInstanceLimit = f.FleetLimit / n
	from, ok := fl.run.FaultStart()
	if !ok {
		from = fl.run.Origin()
	}
	to := fl.run.FaultEnd()
	if secs := to.Sub(from).Seconds(); secs > 0 {
		f.OfferedPerS = Num(float64(culprit.FaultCounts.Total()) / secs)
	}
	if tot := culprit.FaultCounts.Total(); tot > 0 {
		c := culprit.FaultCounts
		f.DepFailedShare = Num(float64(c[rundata.ClassDepTimeout]+c[rundata.ClassDepError]) / float64(tot))
	}
	dep := info.Dependency
	inflight := fl.run.Metric(rundata.ProxyComponent(dep), rundata.MetricProxyInflight)
	f.ConcurrencyOnDep, f.ConcurrencyOnDepSE = meanOver(inflight, from, to), seOver(inflight, from, to)
	f.DepInService = meanOver(fl.run.Metric(rundata.DepComponent(dep), rundata.MetricStubInService), from, to)
	f.DepWaiting = meanOver(fl.run.Metric(rundata.DepComponent(dep), rundata.MetricStubQueueLength), from, to)
	f.FleetInUse = meanOver(fl.run.Metric(rundata.ServiceComponent, rundir.PoolKey(rundata.MetricPoolInUse, f.Pool)), from, to)
	if c := fl.run.Metric(rundata.DepComponent(dep), rundata.MetricStubCapacity); len(c) > 0 && c[len(c)-1].Value > 0 {
		f.Capacity = Num(c[len(c)-1].Value)
	}
	l := rundata.L("dependency", ex.Culprit)
	sum, ok1 := rundir.DeltaOver(fl.run.Metric(rundata.ServiceComponent, rundata.Key(rundata.MetricDepDurationSum, l)), from, to)
	cnt, ok2 := rundir.DeltaOver(fl.run.Metric(rundata.ServiceComponent, rundata.Key(rundata.MetricDepDurationCount, l)), from, to)
	if ok1 && ok2 && cnt > 0 {
		f.MeasuredWaitMs = Num(1000 * sum / cnt)
	}
	k, w := fleetPrediction(float64(f.FleetLimit), float64(f.OfferedPerS), float64(f.ServiceMs)/1000, float64(f.Capacity))
	f.PredictedConcurrency, f.PredictedWaitMs = Num(k), Num(1000*w)
	return f
}

// fleetPrediction is Little's law for a fleet whose permits total nl, at
// arrival rate lambda, against a dependency of c servers (NaN: unlimited)
// each taking s seconds: the calls on the dependency k = min(nl, λ·W) and
// the time a call spends there W = s·max(1, k/c). Below saturation (λ·s ≤
// min(nl, c)) k = λ·s and W = s; otherwise the permits fill, k = nl: with
// λ·s > nl and nl ≤ c the demand exceeds the permits, and with λ·s > c
// the queue makes λ·W = λ·s·k/c > k for every k, so only nl bounds it.
func fleetPrediction(nl, lambda, s, c float64) (k, w float64) {
	if math.IsNaN(c) || c <= 0 {
		c = math.Inf(1)
	}
	k = nl
	if d := lambda * s; d <= min(nl, c) {
		k = d
	}
	return k, s * max(1, k/c)
}

// valuesIn are the values of the series' points from from to to (both
// included, as inRange).
func valuesIn(s []rundir.Point, from, to time.Time) []float64 {
	var v []float64
	for _, p := range s {
		if inRange(p.Time, from, to) {
			v = append(v, p.Value)
		}
	}
	return v
}

// meanOver is the mean of valuesIn; NaN without one.
func meanOver(s []rundir.Point, from, to time.Time) Num {
	return Num(mean(valuesIn(s, from, to)))
}

func containsString(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// seOver is the standard error of meanOver's mean: the sample standard
// deviation of valuesIn over √n; NaN with fewer than 2.
func seOver(s []rundir.Point, from, to time.Time) Num {
	v := valuesIn(s, from, to)
	if len(v) < 2 {
		return Undefined
	}
	m, sq := mean(v), 0.0
	for _, x := range v {
		sq += (x - m) * (x - m)
	}
	return Num(math.Sqrt(sq / float64(len(v)-1) / float64(len(v))))
}
