package measure

import (
	"encoding/json"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/render/words"
	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// Num is a float64 that encodes to JSON with 6 significant digits, and as
// null when NaN or infinite (undefined).
type Num float64

// MarshalJSON implements json.Marshaler.
func (n Num) MarshalJSON() ([]byte, error) { return num(float64(n)), nil }

// UnmarshalJSON implements json.Unmarshaler; null decodes to NaN.
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Num(math.NaN())
		return nil
	}
	var f float64
	err := json.Unmarshal(b, &f)
	*n = Num(f)
	return err
}

// RunSummary holds the per-run numbers the verdicts are built from.
type RunSummary struct {
	ID        string `json:"id"`
	Mode      string `json:"mode"`
	Condition string `json:"condition"`
	Repeat    int    `json:"repeat"`
	Status    string `json:"status"`
	Valid     bool   `json:"valid"`
	// Invalid lists why the run is INVALID: the validity checks it failed,
	// "endpoint/phase: reason".
	Invalid []string `json:"invalid,omitempty"`
	// Broken are the validity rules the run broke, one entry per rule with
	// its worst value (RuleBreaks of its records).
	Broken []RuleBreak `json:"broken_rules,omitempty"`
	// Retried lists the earlier, INVALID attempts of the run that were run
	// again, with their reasons.
	Retried  []Attempt `json:"retried,omitempty"`
	Problems []string  `json:"problems,omitempty"`
	// Damaged lists, "file:line: what", why the data of a run that completed
	// cannot be trusted.
	Damaged []string `json:"damaged,omitempty"`
	// Noise is the run's noise floor: how much of what was measured the
	// machine and the harness could have caused.
	Noise NoiseFloor `json:"noise"`
	// TimeoutMs is T.
	TimeoutMs Num `json:"timeout_ms"`
	// Endpoints are sorted by name.
	Endpoints []EndpointStats `json:"endpoints"`
	// TimeToDegradeT is the time from fault start to the end of the victim's
	// first degraded span (MinSpanResults of its results) within the fault,
	// in units of T; null when it never degraded or the run had no fault.
	TimeToDegradeT Num `json:"time_to_degrade_t"`
	// VictimSpans are the victim's spans of the fault phase (SpanStat).
	VictimSpans []SpanStat `json:"victim_spans,omitempty"`
	// Inferred are the limits seen from outside the service, in the
	// proxies' in-flight counts (InferenceRule).
	Inferred []InferredLimit `json:"inferred_limits,omitempty"`
	// Recovery is how the endpoints came back after the fault
	// (RecoveryRule); nil without a fault or a long enough recovery phase.
	Recovery *RunRecovery `json:"recovery,omitempty"`
	// Leaks are the permits the fault left taken (LeakRule); nil without a
	// fault.
	Leaks *RunLeaks `json:"leaks,omitempty"`
	// Limits are the dependencies' peaks of calls in flight against their
	// limits (LimitRule).
	Limits []LimitCheck `json:"limits,omitempty"`
	// Pools holds the Little's-law comparison per pool, sorted by name.
	Pools     []PoolStats `json:"pools,omitempty"`
	Exhausted Exhaustion  `json:"exhausted"`
	// ConnWaits are the endpoints' waits for a connection, when the
	// service exports its connection pools.
	ConnWaits []ConnWait `json:"conn_waits,omitempty"`
	// WhereTime is where the endpoints' time went, waiting or working,
	// when the service says so in Server-Timing headers, exports its
	// connection hold times or the histograms external.timing.histograms
	// names.
	WhereTime *WhereTime `json:"where_time_went,omitempty"`
	// Policy holds the culprit's policy numbers when the experiment names
	// policy claims.
	Policy *PolicyRun `json:"policy,omitempty"`
	// CPU holds the service's CPU numbers when the experiment names the
	// CPU claim.
	CPU *CPURun `json:"cpu,omitempty"`
	// Sweep is where the run sits in a sweep, if the spec had one.
	Sweep *rundata.SweepPoint `json:"sweep,omitempty"`
	// Instances are each instance's numbers when the service ran as a
	// fleet (the other fields are then the fleet's, every instance
	// together).
	Instances []InstanceStats `json:"instances,omitempty"`
	// Fleet is what the fleet put on the culprit's dependency, when the
	// experiment names fleet claims.
	Fleet *FleetRun `json:"fleet,omitempty"`
	// Priority is what the run held for the critical endpoint and what
	// of it sat idle, when the experiment names the priority claim.
	Priority *PriorityRun `json:"priority,omitempty"`
	// RateLimit is what the culprit's rate limiter did, when the
	// experiment names the rate-limit claim (ratelimit.go).
	RateLimit *RateLimitRun `json:"ratelimit,omitempty"`
	// Memory is the calls in flight and the service's memory over the
	// fault phase, when the experiment names the memory claim (memory.go).
	Memory *MemoryRun `json:"memory,omitempty"`
	// MemoryStop is set when the memory guard stopped the run (status
	// stopped): the service's memory reached its ceiling.
	MemoryStop *rundata.MemoryStop `json:"memory_stop,omitempty"`
	// Tenants is what the service's tenant stage saw of each endpoint's
	// tenant, when the experiment names the tenant claims.
	Tenants *TenantsRun `json:"tenants,omitempty"`
	// Jobs is what the service's job queue did and what the live traffic
	// got while it drained, when the service had one (jobs.go).
	Jobs *JobsRun `json:"jobs,omitempty"`
	// Processes is what the run's layout cost in processes, memory and
	// CPU, when the experiment names the processes claim.
	Processes *ProcessesRun `json:"processes,omitempty"`
	// Shards summarises the load generator's shards, when several
	// processes sent the load.
	Shards *ShardsRun `json:"shards,omitempty"`
	// Image is the run's PNG, relative to the report folder.
	Image string `json:"image,omitempty"`
}

// ShardsRun is what the report says of a run's shards.
type ShardsRun struct {
	Count int `json:"count"`
	// OffsetErrorMs is the worst bound on a shard's clock offset;
	// LateMs the latest a shard started after t0 (by its clock).
	OffsetErrorMs Num `json:"offset_error_ms"`
	LateMs        Num `json:"late_ms"`
	// Failed counts the shards whose stream failed.
	Failed int `json:"failed,omitempty"`
}

// shardsRun summarises shards; nil for none.
func shardsRun(shards []rundata.ShardStats) *ShardsRun {
	if len(shards) == 0 {
		return nil
	}
	out := &ShardsRun{Count: len(shards)}
	for _, sh := range shards {
		out.OffsetErrorMs = Num(max(float64(out.OffsetErrorMs), Millis(sh.OffsetError)))
		out.LateMs = Num(max(float64(out.LateMs), Millis(sh.Late)))
		if sh.Error != "" {
			out.Failed++
		}
	}
	return out
}

// Usable reports whether verdicts may use the run's numbers (rundir.Usable).
func (s RunSummary) Usable() bool { return rundir.Usable(s.Status, s.Valid, s.Problems, s.Damaged) }

// Exclusion says why a run is not used by the verdicts ("" when it is).
func (s RunSummary) Exclusion() string {
	switch {
	case len(s.Damaged) > 0:
		return "damaged data: " + strings.Join(s.Damaged, "; ")
	case len(s.Problems) > 0:
		return "incomplete: " + strings.Join(s.Problems, "; ")
	case s.Status != rundata.StatusComplete:
		return "incomplete: status " + s.Status
	case !s.Valid:
		return "INVALID: " + strings.Join(s.Invalid, "; ")
	}
	return ""
}

// EndpointStats are one endpoint's numbers in one run.
type EndpointStats struct {
	Endpoint string `json:"endpoint"`
	// Dependency is the dependency the endpoint calls ("" when unknown).
	Dependency    string `json:"dependency,omitempty"`
	BaselineP50Ms Num    `json:"baseline_p50_ms"`
	BaselineP99Ms Num    `json:"baseline_p99_ms"`
	FaultP50Ms    Num    `json:"fault_p50_ms"`
	// Fault-phase numbers (the whole run after warmup when there is no
	// fault phase).
	FaultP99Ms     Num            `json:"fault_p99_ms"`
	FaultErrorRate Num            `json:"fault_error_rate"`
	FaultOKRate    Num            `json:"fault_ok_per_s"`
	FaultCounts    rundata.Counts `json:"fault_counts"`
	RejectedP99Ms  Num            `json:"rejected_p99_ms"`
	// FastRejectShare is the share of failures that were rejections faster
	// than P2FastRejectMaxT·T (estimated from the rejected-latency
	// quantiles), of the failures other than AdmittedTimeouts; null
	// without such failures.
	FastRejectShare Num `json:"fast_reject_share"`
	// AdmittedTimeouts are the dependency timeouts of calls the endpoint's
	// pool admitted (at most its limit × the phase's seconds / T): the
	// dependency's failures, left out of FastRejectShare.
	AdmittedTimeouts Num `json:"admitted_timeouts"`
	// UnclassifiedShare is the share of the fault phase's results that no
	// classification rule matched (class other); Unclassified counts them
	// by status code.
	UnclassifiedShare Num              `json:"unclassified_share"`
	Unclassified      map[string]int64 `json:"unclassified,omitempty"`
	// Phases are the endpoint's numbers in every phase, in order.
	Phases []PhaseNumbers `json:"phases"`
	// Retry holds the fault phase's retry numbers when the endpoint's
	// clients retry.
	Retry *RetryStats `json:"retry,omitempty"`
}

// RetryStats are a retrying client's numbers over a phase.
type RetryStats struct {
	// MaxAttempts is the most attempts per request, the first included.
	MaxAttempts int `json:"max_attempts"`
	// OfferedPerS is first attempts per second (the requests);
	// DeliveredPerS every attempt per second (what reached the service).
	OfferedPerS   Num `json:"offered_per_s"`
	DeliveredPerS Num `json:"delivered_per_s"`
	// Amplification is DeliveredPerS / OfferedPerS.
	Amplification Num `json:"amplification"`
	// RetryableShare is r: the share of attempts whose outcome the client
	// retries (for the built-in service mostly rejections).
	RetryableShare Num `json:"retryable_share"`
	// Predicted is 1 + r + … + r^(MaxAttempts−1): the amplification if
	// every attempt failed independently with probability r and nothing
	// stopped a retry.
	Predicted Num `json:"predicted_amplification"`
	// RefusedShare is the share of requests whose retry was refused (by the
	// budget or a Retry-After beyond the deadline).
	RefusedShare Num `json:"refused_share"`
}

// retryStats computes RetryStats from a phase's counts.
func retryStats(maxAttempts int, c rundata.RetryCounts, secs float64) *RetryStats {
	st := &RetryStats{MaxAttempts: maxAttempts, OfferedPerS: Undefined, DeliveredPerS: Undefined, Amplification: Num(c.Amplification()),
		RetryableShare: Num(c.RetryableShare()), Predicted: Undefined, RefusedShare: Undefined}
	first := c.Attempts - c.Retries
	if secs > 0 {
		st.OfferedPerS, st.DeliveredPerS = Num(float64(first)/secs), Num(float64(c.Attempts)/secs)
	}
	if first > 0 {
		st.RefusedShare = Num(float64(c.Refused) / float64(first))
	}
	if r := c.RetryableShare(); !math.IsNaN(r) {
		p, term := 0.0, 1.0
		for range maxAttempts {
			p, term = p+term, term*r
		}
		st.Predicted = Num(p)
	}
	return st
}

// PhaseNumbers are one endpoint's numbers in one phase.
type PhaseNumbers struct {
	Phase     string `json:"phase"`
	Results   int64  `json:"results"`
	P50Ms     Num    `json:"p50_ms"`
	P99Ms     Num    `json:"p99_ms"`
	ErrorRate Num    `json:"error_rate"`
	OKPerS    Num    `json:"ok_per_s"`
	// Unclassified counts results no rule matched, by status code.
	Unclassified map[string]int64 `json:"unclassified,omitempty"`
}

// PoolStats compares Little's-law predictions with the measurement for one
// pool over the fault phase.
type PoolStats struct {
	Pool            string `json:"pool"`
	Limit           int    `json:"limit"`
	PredictedDemand Num    `json:"predicted_demand"`
	// MeasuredDemand is Σ λ·W over the pool's endpoints: achieved arrival
	// rate times mean dependency-call duration (service metrics), falling
	// back to the mean successful latency.
	MeasuredDemand Num `json:"measured_demand"`
	DemandRatio    Num `json:"demand_ratio"`
	PeakInUse      Num `json:"peak_in_use"`
	// Exhaustion times are seconds from fault start; measured is the first
	// sample with in_use ≥ limit (resolution: the sampling interval).
	PredictedExhaustionS Num `json:"predicted_exhaustion_s"`
	MeasuredExhaustionS  Num `json:"measured_exhaustion_s"`
	ExhaustionRatio      Num `json:"exhaustion_ratio"`
}

var Undefined = Num(math.NaN())

// Summarize computes a run's numbers under the expectations ex.
func Summarize(data *rundir.Run, ex rundata.Expectations) RunSummary {
	r := &Run{Data: data}
	s := RunSummary{
		ID: data.Entry.ID, Mode: data.Entry.Mode, Condition: data.Entry.Condition, Repeat: data.Entry.Repeat,
		Status: data.Meta.Status, Valid: data.Meta.Valid, Problems: data.Problems, Damaged: data.Damaged,
		Retried: attemptsOf(data.Meta.Attempts), TimeoutMs: Num(Millis(data.Meta.Timeout)), TimeToDegradeT: Undefined, Sweep: data.Meta.Sweep,
		Shards: shardsRun(data.Meta.Shards), MemoryStop: data.Meta.MemoryStop,
	}
	var broken []rundata.Broken
	for _, v := range data.Meta.Validity {
		if !v.Valid {
			broken = append(broken, v.Broken...)
		}
	}
	s.Invalid, s.Broken = words.Reasons(broken), RuleBreaks(broken)
	if data.Meta.Status == rundata.StatusComplete && !data.Meta.Valid && len(broken) == 0 {
		s.Invalid = []string{"the load generator did not keep the open model"}
		s.Broken = []RuleBreak{{Rule: RuleOther, Measured: Undefined, Limit: Undefined}}
	}
	s.Noise = r.NoiseFloor()
	phase := mainPhase(data)
	for _, ep := range data.Endpoints() {
		s.Endpoints = append(s.Endpoints, endpointWindows{data}.endpointStats(ep, phase, ex))
	}
	if t, ok := r.timeToDegrade(ex); ok {
		s.TimeToDegradeT = Num(t)
	}
	s.VictimSpans = r.victimSpans(ex)
	for _, p := range data.PoolNames() {
		s.Pools = append(s.Pools, littlesLaw{data}.poolStats(p))
	}
	errRate := map[string]float64{}
	for _, e := range s.Endpoints {
		errRate[e.Endpoint] = float64(e.FaultErrorRate)
	}
	slowed := map[string]bool{}
	for _, e := range s.Endpoints {
		slowed[e.Endpoint] = float64(s.P99RiseT(e.Endpoint)) > ex.P2MaxP99RiseT
	}
	s.Inferred = inferLimits(data, errRate, slowed)
	if len(s.Pools) == 0 {
		for _, l := range s.Inferred {
			st := l.poolStats()
			if pred, ok := (callGraph{data}).demandOn(l.Dependencies); ok {
				st.PredictedDemand = Num(pred[mainPhase(data)])
				st.DemandRatio = Num(Ratio(float64(st.MeasuredDemand), float64(st.PredictedDemand)))
			}
			s.Pools = append(s.Pools, st)
		}
	}
	s.Exhausted = exhaustionScan{data}.exhaustion(s.Inferred)
	s.Exhausted.PoolFirst, s.Exhausted.PoolFirstWhy = poolFirstRule{data}.poolFirst(s.Exhausted, s.Inferred)
	for _, f := range runFamilies {
		f(r.Data, &s, ex)
	}
	return s
}

// A runFamily adds one claim family's run numbers to a run's summary, from
// the run and the numbers every run has (endpoints, pools, inferred limits,
// the exhausted resource).
type runFamily func(r *rundir.Run, s *RunSummary, ex rundata.Expectations)

// runFamilies are the claim families with run numbers of their own: each is
// one file of this package (the aftermath's three), its verdicts one file of
// package verdict. A new claim family is a file here, a file there, a line
// in this list and in verdict's families, and its field of RunSummary (the
// record of summary.json).
var runFamilies = []runFamily{
	aftermath,       // recovery.go, leak.go, limits.go: RECOVERY, NO-LEAK, LIMIT-HOLDS
	connsFamily,     // conns.go: the endpoints' waits for a connection
	timingFamily,    // timing.go: where the time went, waiting or working
	policyFamily,    // policy.go: breakers, adaptive limits, retries
	cpuFamily,       // cpu.go: the service's CPU
	fleetFamily,     // fleet.go: each instance, and what the fleet put on the culprit's dependency
	priorityFamily,  // priority.go: what was held for the critical endpoint, and what of it sat idle
	rateLimitFamily, // ratelimit.go: what a rate limiter did with the culprit's calls
	memoryFamily,    // memory.go: the calls in flight and the service's memory over the fault
	tenantFamily,    // tenants.go: each endpoint's tenant, its share and what was refused over it
	jobsFamily,      // jobs.go: the job queue's drain, and the live traffic beside it
	processesFamily, // processes.go: what the layout cost in processes, memory and CPU
}

// mainPhase is the phase whose numbers stand for the run: "fault" when it
// exists, else "" (meaning every window after warmup).
func mainPhase(run *rundir.Run) string {
	if _, ok := run.PhaseSpan(rundata.PhaseFault); ok {
		return rundata.PhaseFault
	}
	for _, p := range run.Phases {
		if p.Phase == rundata.PhaseFault {
			return rundata.PhaseFault
		}
	}
	return ""
}

// endpointWindows reads the endpoints' windows, one endpoint at a time: its
// phase numbers, its baseline and its degraded spans.
type endpointWindows struct{ run *rundir.Run }

func (ew endpointWindows) endpointStats(ep, phase string, ex rundata.Expectations) EndpointStats {
	st := EndpointStats{Endpoint: ep, Dependency: ew.dependencyOf(ep), BaselineP99Ms: Num(ew.baselineP99(ep)), FaultP99Ms: Undefined, BaselineP50Ms: Undefined,
		FaultP50Ms: Undefined, FaultErrorRate: Undefined, FaultOKRate: Undefined, RejectedP99Ms: Undefined, FastRejectShare: Undefined, AdmittedTimeouts: Undefined, UnclassifiedShare: Undefined}
	if ps, ok := ew.run.PhaseSummary(ep, rundata.PhaseBaseline); ok && ps.Counts.Total() > 0 {
		st.BaselineP50Ms = Num(Millis(ps.Latency.P50))
	}
	for _, p := range ew.run.Meta.Phases {
		st.Phases = append(st.Phases, ew.phaseNumbers(ep, p.Name))
	}
	ps, ok := ew.run.PhaseSummary(ep, phase)
	if !ok {
		ps = ew.mergeWindows(ep, phase)
	}
	secs := ew.run.PhaseSeconds(phase)
	if phase == "" {
		secs = ew.windowSeconds(ep)
	}
	st.FaultCounts = ps.Counts
	if tot := ps.Counts.Total(); tot > 0 {
		st.FaultP50Ms = Num(Millis(ps.Latency.P50))
		st.FaultP99Ms = Num(Millis(ps.Latency.P99))
		st.FaultErrorRate = Num(float64(ps.Counts.Failed()) / float64(tot))
		st.UnclassifiedShare = Num(float64(ps.Counts[rundata.ClassOther]) / float64(tot))
		st.Unclassified = ps.Unclassified
	}
	if secs > 0 {
		st.FaultOKRate = Num(float64(ps.Counts[rundata.ClassOK]) / secs)
	}
	if info := ew.run.EndpointInfo(ep); info.RetryAttempts > 0 {
		st.Retry = retryStats(info.RetryAttempts, ps.RetryCounts, secs)
	}
	rq := ps.ByClass[rundata.ClassRejected.String()]
	if rq.Count > 0 {
		st.RejectedP99Ms = Num(Millis(rq.P99))
	}
	st.AdmittedTimeouts = Num(ew.admittedTimeouts(ep, ps.Counts, secs))
	if owed := float64(ps.Counts.Failed()) - float64(st.AdmittedTimeouts); owed > 0 {
		thr := time.Duration(ex.P2FastRejectMaxT * float64(ew.run.Meta.Timeout))
		fast := float64(ps.Counts[rundata.ClassRejected]) * cdfAt(rq, thr)
		st.FastRejectShare = Num(min(fast/owed, 1))
	}
	return st
}

// admittedTimeouts is how many of ep's dependency timeouts over secs were
// calls its pool admitted: a pool of L permits, each held for T by a call
// that times out, lets through at most L·secs/T of them. Those failed at
// the dependency, not at the pool: a slow dependency whose answers the
// machine pushes past T times some of them out with the best bulkhead, so
// they do not count against the pool failing fast. Every timeout beyond
// what the pool could have admitted does; an endpoint without a declared
// pool limit gets none (a service with no limit must not hide behind one).
func (ew endpointWindows) admittedTimeouts(ep string, c rundata.Counts, secs float64) float64 {
	info := ew.run.EndpointInfo(ep)
	limit := ew.run.PoolInfo(info.Pool).Limit
	if info.Pool == "" || limit <= 0 || ew.run.Meta.Timeout <= 0 || secs <= 0 {
		return 0
	}
	return math.Min(float64(c[rundata.ClassDepTimeout]), math.Floor(float64(limit)*secs/ew.run.Meta.Timeout.Seconds()))
}

// phaseNumbers are ep's numbers over one phase (undefined when it had no
// results).
func (ew endpointWindows) phaseNumbers(ep, phase string) PhaseNumbers {
	n := PhaseNumbers{Phase: phase, P50Ms: Undefined, P99Ms: Undefined, ErrorRate: Undefined, OKPerS: Undefined}
	ps, ok := ew.run.PhaseSummary(ep, phase)
	if !ok {
		ps = ew.mergeWindows(ep, phase)
	}
	n.Results = ps.Counts.Total()
	n.Unclassified = ps.Unclassified
	if n.Results > 0 {
		n.P50Ms, n.P99Ms = Num(Millis(ps.Latency.P50)), Num(Millis(ps.Latency.P99))
		n.ErrorRate = Num(float64(ps.Counts.Failed()) / float64(n.Results))
	}
	if secs := ew.run.PhaseSeconds(phase); secs > 0 {
		n.OKPerS = Num(float64(ps.Counts[rundata.ClassOK]) / secs)
	}
	return n
}

// cdfAt estimates the share of a histogram at or below d by interpolating
// linearly between its quantiles (0 at 0, 0.5 at p50, ..., 1 at max).
func cdfAt(q rundata.Quantiles, d time.Duration) float64 {
	if q.Count == 0 {
		return 0
	}
	xs := []time.Duration{0, q.P50, q.P90, q.P99, q.P999, q.Max}
	ps := []float64{0, 0.5, 0.9, 0.99, 0.999, 1}
	if d >= q.Max {
		return 1
	}
	for i := 1; i < len(xs); i++ {
		if d < xs[i] {
			if xs[i] == xs[i-1] {
				return ps[i-1]
			}
			f := float64(d-xs[i-1]) / float64(xs[i]-xs[i-1])
			return ps[i-1] + f*(ps[i]-ps[i-1])
		}
	}
	return 1
}

// baselineP99 is ep's p99 over the baseline phase in ms (NaN if unknown):
// from phases.json, else the median of the baseline windows' p99.
func (ew endpointWindows) baselineP99(ep string) float64 {
	if ps, ok := ew.run.PhaseSummary(ep, rundata.PhaseBaseline); ok && ps.Counts.Total() > 0 {
		return Millis(ps.Latency.P99)
	}
	var v []float64
	for _, w := range ew.run.EndpointWindows(ep) {
		if w.Phase == rundata.PhaseBaseline && w.Counts.Total() > 0 {
			v = append(v, Millis(w.Latency.P99))
		}
	}
	if len(v) == 0 {
		return math.NaN()
	}
	sort.Float64s(v)
	return v[len(v)/2]
}

// mergeWindows approximates a PhaseSummary from windows when phases.json is
// missing: counts add up, the p99 is the largest window p99 (an upper bound).
func (ew endpointWindows) mergeWindows(ep, phase string) rundata.PhaseStats {
	ps := rundata.PhaseStats{Endpoint: ep, Phase: phase}
	for _, w := range ew.run.EndpointWindows(ep) {
		if (phase == "" && w.Phase == rundata.PhaseWarmup) || (phase != "" && w.Phase != phase) {
			continue
		}
		for i, c := range w.Counts {
			ps.Counts[i] += c
		}
		ps.RetryCounts.Add(w.RetryCounts)
		ps.Latency.P99 = max(ps.Latency.P99, w.Latency.P99)
		ps.Latency.Count += w.Latency.Count
	}
	return ps
}

func (ew endpointWindows) windowSeconds(ep string) float64 {
	var d time.Duration
	for _, w := range ew.run.EndpointWindows(ep) {
		if w.Phase != rundata.PhaseWarmup {
			d += w.Duration
		}
	}
	return d.Seconds()
}

// degraded reports whether w (a span of windows) is degraded against a
// baseline p99 in ms.
func degraded(w rundata.Window, baseP99 float64, ex rundata.Expectations) bool {
	return degradedAgainst(w, baseP99, ex, DegradeControl{})
}

// DegradeControl is the victim's noise in the control (healthy) cell: the
// largest ratio of a fault-phase span's p99 to its run's baseline p99, and
// the largest error rate of such a span. A span of the fault run is
// degraded only beyond both the expectations' thresholds and these.
type DegradeControl struct {
	P99Ratio, ErrorRate float64
}

// degradedAgainst reports whether span w is degraded against its baseline
// p99 (ms) and the control's noise.
func degradedAgainst(w rundata.Window, baseP99 float64, ex rundata.Expectations, c DegradeControl) bool {
	tot := w.Counts.Total()
	if tot == 0 {
		return false
	}
	ratio := math.NaN() // no baseline: the errors alone can tell
	if baseP99 > 0 {
		ratio = Millis(w.Latency.P99) / baseP99
	}
	return c.exceeded(float64(w.Counts.Failed())/float64(tot), ratio, ex)
}

// exceeded reports whether an error rate or a p99 over its baseline's
// (NaN: unknown) is beyond both the expectations' thresholds and the
// control's noise.
func (c DegradeControl) exceeded(errRate, p99Ratio float64, ex rundata.Expectations) bool {
	return (errRate > ex.DegradedErrorRate && errRate > c.ErrorRate) || (p99Ratio > ex.DegradedP99Factor && p99Ratio > c.P99Ratio)
}

// timeToDegrade is the time in units of T from fault start to the end of the
// victim's first degraded span (MinSpanResults) within the fault.
func (r *Run) timeToDegrade(ex rundata.Expectations) (float64, bool) {
	d, ok := endpointWindows{r.Data}.firstDegraded(ex.Victim, func(w rundata.Window, base float64) bool { return degraded(w, base, ex) })
	return float64(d) / float64(r.Data.Meta.Timeout), ok
}

// MinSpanResults is the fewest of an endpoint's results a degraded
// judgement is made over: a span of consecutive windows holding at least
// this many, so that one slow request cannot be a span's p99 (with 50
// results a window's p99 is its maximum).
const MinSpanResults = 100

// spans returns, for each of ep's windows starting in [from, to), the
// shortest run of consecutive windows from it, each starting in the range,
// that holds MinSpanResults results (all of the range's, when it holds
// fewer), merged into one window; a window that cannot start such a span
// starts none.
func (ew endpointWindows) spans(ep string, from, to time.Time) []rundata.Window {
	var ws []rundata.Window
	for _, w := range ew.run.EndpointWindows(ep) {
		if !w.Start.Before(from) && (to.IsZero() || w.Start.Before(to)) {
			ws = append(ws, w)
		}
	}
	// An endpoint too slow to send MinSpanResults in the whole range is
	// judged over all of it.
	need := int64(MinSpanResults)
	var total int64
	for _, w := range ws {
		total += w.Counts.Total()
	}
	need = max(1, min(need, total))
	var out []rundata.Window
	for i := range ws {
		var n int64
		for j := i; j < len(ws); j++ {
			n += ws[j].Counts.Total()
			if n >= need {
				out = append(out, mergeWindows(ws[i:j+1]))
				break
			}
		}
	}
	return out
}

// mergeWindows is ws as one window: counts added, p99 of the merged
// latencies (mergedQuantile), from the first's start to the last's end.
func mergeWindows(ws []rundata.Window) rundata.Window {
	m := ws[0]
	last := ws[len(ws)-1]
	m.Duration = last.Start.Add(last.Duration).Sub(m.Start)
	for _, w := range ws[1:] {
		for c, n := range w.Counts {
			m.Counts[c] += n
		}
		m.Latency.Count += w.Latency.Count
		m.Latency.Max = max(m.Latency.Max, w.Latency.Max)
	}
	if len(ws) > 1 {
		m.Latency.P99 = mergedQuantile(ws, 0.99)
	}
	return m
}

// firstDegraded is the time from fault start to the end of endpoint ep's
// first span (spans), starting no earlier than half a window before the
// fault and ending by the fault's end, that bad (given its baseline p99 in
// ms) finds degraded; false when none is, or the run had no fault.
func (ew endpointWindows) firstDegraded(ep string, bad func(w rundata.Window, baseP99 float64) bool) (time.Duration, bool) {
	fs, ok := ew.run.FaultStart()
	if !ok || ew.run.Meta.Timeout <= 0 {
		return 0, false
	}
	base := ew.baselineP99(ep)
	for _, sp := range ew.spans(ep, fs.Add(-ew.run.Meta.Window/2), ew.run.FaultEnd()) {
		if !bad(sp, base) {
			continue
		}
		// The span decides that it degraded; its first window degraded by
		// itself, if any, says when.
		end := sp.Start.Add(sp.Duration)
		for _, w := range ew.run.EndpointWindows(ep) {
			if !w.Start.Before(sp.Start) && w.Start.Before(end) && bad(w, base) {
				end = w.Start.Add(w.Duration)
				break
			}
		}
		return max(end.Sub(fs), 0), true
	}
	return 0, false
}

// SpanStat is one span of an endpoint's fault-phase windows (spans): its
// end from the phase's start in T, its p99 over the run's baseline p99, and
// its error rate. The victim's spans of every run are kept so that P1 can
// judge a fault run's against the control cell's.
type SpanStat struct {
	EndT      Num `json:"end_t"`
	P99Ratio  Num `json:"p99_ratio"`
	ErrorRate Num `json:"error_rate"`
}

// victimSpans are the victim's spans over the fault phase.
func (r *Run) victimSpans(ex rundata.Expectations) []SpanStat {
	span, ok := r.Data.PhaseSpan(rundata.PhaseFault)
	if !ok || r.Data.Meta.Timeout <= 0 {
		return nil
	}
	base := endpointWindows{r.Data}.baselineP99(ex.Victim)
	var out []SpanStat
	for _, sp := range (endpointWindows{r.Data}).spans(ex.Victim, span.Start.Add(-r.Data.Meta.Window/2), span.End) {
		tot := sp.Counts.Total()
		// A span is dated by its first window (the degradation it shows
		// began there at the latest) so that spans do not delay it.
		end := sp.Start.Add(r.Data.Meta.Window)
		out = append(out, SpanStat{EndT: Num(float64(end.Sub(span.Start)) / float64(r.Data.Meta.Timeout)),
			P99Ratio: Num(Ratio(Millis(sp.Latency.P99), base)), ErrorRate: Num(float64(sp.Counts.Failed()) / float64(tot))})
	}
	return out
}

// TimeToDegradeAgainst is the time, in T from the fault phase's start, to
// the end of the first of the run's victim spans degraded beyond both the
// expectations' thresholds and the control's noise; undefined when none is.
func TimeToDegradeAgainst(s RunSummary, ex rundata.Expectations, c DegradeControl) Num {
	for _, sp := range s.VictimSpans {
		if c.exceeded(float64(sp.ErrorRate), float64(sp.P99Ratio), ex) {
			return sp.EndT
		}
	}
	return Undefined
}

// ControlOf is the victim's noise over control runs: the largest span p99
// ratio and error rate of their fault phases (zero without runs).
func ControlOf(runs []RunSummary) DegradeControl {
	var c DegradeControl
	for _, r := range runs {
		for _, sp := range r.VictimSpans {
			if v := float64(sp.P99Ratio); !math.IsNaN(v) {
				c.P99Ratio = max(c.P99Ratio, v)
			}
			if v := float64(sp.ErrorRate); !math.IsNaN(v) {
				c.ErrorRate = max(c.ErrorRate, v)
			}
		}
	}
	return c
}

// Endpoint returns the stats of endpoint name, all undefined when absent.
func (s RunSummary) Endpoint(name string) EndpointStats {
	for _, e := range s.Endpoints {
		if e.Endpoint == name {
			return e
		}
	}
	return EndpointStats{Endpoint: name, BaselineP50Ms: Undefined, BaselineP99Ms: Undefined, FaultP50Ms: Undefined, FaultP99Ms: Undefined,
		FaultErrorRate: Undefined, FaultOKRate: Undefined, RejectedP99Ms: Undefined, FastRejectShare: Undefined, AdmittedTimeouts: Undefined, UnclassifiedShare: Undefined}
}

// Harm is how far endpoint name's fault phase is from its baseline in this
// run (Harm; above 1: P2 would not hold for it).
func (s RunSummary) Harm(name string, ex rundata.Expectations) Num {
	e := s.Endpoint(name)
	return Num(Harm(float64(s.P99RiseT(name)), float64(e.FaultErrorRate), e.BaselineErrorRate(), ex))
}

// P99RiseT is how far endpoint name's fault-phase p99 rose above its
// baseline p99, in units of T (P2's measure).
func (s RunSummary) P99RiseT(name string) Num {
	e := s.Endpoint(name)
	return Num(Ratio(float64(e.FaultP99Ms)-float64(e.BaselineP99Ms), float64(s.TimeoutMs)))
}

// P99RiseBeyondMachineT is P99RiseT less what the machine alone could
// have added to the fault-phase p99 in this run (Noise.MachineAllowanceMs,
// MachineRule), never taken below zero by it: the rise a busy but valid
// run lays at the service's door. Without an allowance it is P99RiseT.
func (s RunSummary) P99RiseBeyondMachineT(name string) Num {
	rise, a, t := float64(s.P99RiseT(name)), float64(s.Noise.MachineAllowanceMs), float64(s.TimeoutMs)
	if !(a > 0) || !(rise > 0) || !(t > 0) {
		return Num(rise)
	}
	return Num(max(0, rise-a/t))
}

// RejectedShare is the share of the endpoint's fault-phase results that a
// bulkhead, breaker or limiter of the service refused.
func RejectedShare(e EndpointStats) Num {
	tot := e.FaultCounts.Total()
	if tot == 0 {
		return Undefined
	}
	c := e.FaultCounts
	return Num(float64(c[rundata.ClassRejected]+c[rundata.ClassLimited]+c[rundata.ClassCircuitOpen]) / float64(tot))
}

// DependencyOf is the dependency endpoint ep calls as the first of runs
// that knows it says, "" when none does.
func DependencyOf(runs []RunSummary, ep string) string {
	for _, r := range runs {
		if d := r.Endpoint(ep).Dependency; d != "" {
			return d
		}
	}
	return ""
}

// dependencyOf is the dependency endpoint ep calls, "" when the run does
// not say.
func (ew endpointWindows) dependencyOf(ep string) string {
	for _, e := range ew.run.Meta.Endpoints {
		if e.Name == ep {
			return e.Dependency
		}
	}
	return ""
}
