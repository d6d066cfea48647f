package measure

import (
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// NoiseFloor is how much of what a run measured the machine and the harness
// could have caused, over the judged phases (after warmup): the canary (a
// request that does no work), the load generator's schedule lag, the Go
// runtime's scheduling latency of each process, and the machine's CPU.
type NoiseFloor struct {
	// CanaryP99Ms is the largest canary p99 of a judged phase; null without
	// a canary. CanaryLimitMs is its validity limit.
	CanaryP99Ms   Num `json:"canary_p99_ms"`
	CanaryLimitMs Num `json:"canary_limit_ms"`
	// LagP99Ms is the largest schedule-lag p99 of a judged phase and
	// endpoint.
	LagP99Ms Num `json:"lag_p99_ms"`
	// SchedP99Ms is, per component, the largest p99 of the Go runtime's
	// scheduling latency over a sampling interval.
	SchedP99Ms map[string]Num `json:"sched_p99_ms,omitempty"`
	// RunqueueWait is, per component, the mean number of its threads that
	// were runnable but not running (run-queue wait seconds per second).
	RunqueueWait map[string]Num `json:"runqueue_wait,omitempty"`
	// MachineBusy is the share of the machine's CPU time that was busy.
	MachineBusy Num `json:"machine_busy"`
	// MachineSteal is the share of the machine's CPU time the hypervisor
	// gave to other guests (part of MachineBusy); null where the run did
	// not sample it.
	MachineSteal Num `json:"machine_steal"`
	// MachineAllowanceMs is how much the machine alone could have added to
	// an endpoint's fault-phase p99 (MachineRule: MachineCouldAddMs of the
	// canary's fault-phase p99); 0, and left out, when the canary stayed
	// under half its limit there or the run had none.
	MachineAllowanceMs Num `json:"machine_allowance_ms,omitempty"`
}

// MachineRule documents what the machine alone may add to a latency; the
// at-baseline p99 checks take it off the victim's rise, and the recovery
// scan leaves a miss of that size unjudged.
const MachineRule = "when the canary (a request that does no work) took over half its validity limit, the machine alone may have added up to 3 times the canary's latency to an endpoint's (its call crosses the service, the dependency's proxy and the dependency, and a busy machine can delay each as much as it delayed the canary); when the canary stayed under half its limit, nothing"

// machineHops is how many processes an endpoint's call crosses (the
// service, the dependency's proxy and the dependency), each of which a busy
// machine can delay as much as it delayed the canary.
const machineHops = 3

// MachineCouldAddMs is how much the machine alone could have added to an
// endpoint's latency where it delayed the canary by canary (MachineRule):
// machineHops × canary when that is over half the canary's validity
// limit, else 0 — a machine that delays a request that does no work by
// less than that is one whose numbers are taken as they are.
func MachineCouldAddMs(canary, limit time.Duration) float64 {
	if limit <= 0 || 2*canary <= limit {
		return 0
	}
	return machineHops * Millis(canary)
}

// judgedFrom is the start of the judged phases: the end of warmup, else the
// run's origin.
func judgedFrom(run *rundir.Run) time.Time {
	if p, ok := run.PhaseSpan(rundata.PhaseWarmup); ok {
		return p.End
	}
	return run.Origin()
}

func (r *Run) NoiseFloor() NoiseFloor {
	n := NoiseFloor{CanaryP99Ms: Undefined, CanaryLimitMs: Undefined, LagP99Ms: Undefined, MachineBusy: Undefined, MachineSteal: Undefined}
	c := r.Data.Meta.Canary
	if c != nil {
		n.CanaryLimitMs = Num(Millis(c.MaxP99))
	}
	for _, p := range r.Data.Phases {
		if p.Phase == rundata.PhaseWarmup || p.Latency.Count == 0 {
			continue
		}
		if p.Endpoint == rundata.CanaryEndpoint {
			n.CanaryP99Ms = maxNum(n.CanaryP99Ms, Num(Millis(p.Latency.P99)))
			if p.Phase == rundata.PhaseFault && c != nil {
				n.MachineAllowanceMs = Num(MachineCouldAddMs(p.Latency.P99, c.MaxP99))
			}
			continue
		}
		n.LagP99Ms = maxNum(n.LagP99Ms, Num(Millis(p.LagP99)))
	}
	from, to := judgedFrom(r.Data), r.Data.End()
	for _, comp := range r.Components() {
		if s := r.Data.Metric(comp, rundata.MetricSchedLatencyP99); len(s) > 0 {
			if n.SchedP99Ms == nil {
				n.SchedP99Ms = map[string]Num{}
			}
			v := Undefined
			for _, p := range s {
				if inRange(p.Time, from, to) {
					v = maxNum(v, Num(1000*p.Value))
				}
			}
			n.SchedP99Ms[comp] = v
		}
		if w, ok := rate(r.Data.Metric(comp, rundata.MetricRunqueueWait), from, to); ok {
			if n.RunqueueWait == nil {
				n.RunqueueWait = map[string]Num{}
			}
			n.RunqueueWait[comp] = Num(w)
		}
	}
	busy, ok1 := rundir.DeltaOver(r.Data.Metric(rundata.MachineComponent, rundata.MetricMachineBusySeconds), from, to)
	total, ok2 := rundir.DeltaOver(r.Data.Metric(rundata.MachineComponent, rundata.MetricMachineCPUSeconds), from, to)
	if ok1 && ok2 && total > 0 {
		n.MachineBusy = Num(busy / total)
		if steal, ok := rundir.DeltaOver(r.Data.Metric(rundata.MachineComponent, rundata.MetricMachineStealSeconds), from, to); ok {
			n.MachineSteal = Num(steal / total)
		}
	}
	return n
}

// rate is the increase of a counter per second between from and to.
func rate(s []rundir.Point, from, to time.Time) (float64, bool) {
	d, ok := rundir.DeltaOver(s, from, to)
	secs := to.Sub(from).Seconds()
	if !ok || secs <= 0 {
		return 0, false
	}
	return d / secs, true
}

// Components are the components of the run's samples, sorted.
func (r *Run) Components() []string { return components(r.Data) }

// components are the components of run's samples, sorted.
func components(run *rundir.Run) []string {
	set := map[string]bool{}
	for _, s := range run.Metrics {
		set[s.Component] = true
	}
	out := slices.Sorted(maps.Keys(set))
	sort.SliceStable(out, func(i, j int) bool { return componentRank(out[i]) < componentRank(out[j]) })
	return out
}

// componentRank orders components: the service, the load generator, the
// proxies, the dependencies, the rest.
func componentRank(c string) int {
	switch {
	case c == rundata.ServiceComponent:
		return 0
	case c == rundata.LoadgenComponent:
		return 1
	case strings.HasPrefix(c, "proxy-"):
		return 2
	case strings.HasPrefix(c, "dep-"):
		return 3
	}
	return 4
}

func maxNum(a, b Num) Num {
	switch {
	case math.IsNaN(float64(a)):
		return b
	case math.IsNaN(float64(b)):
		return a
	}
	return Num(math.Max(float64(a), float64(b)))
}
