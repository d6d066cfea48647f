package rundir

import (
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// PhaseSpan returns the span named name, if the run recorded it.
func (r *Run) PhaseSpan(name string) (rundata.PhaseSpan, bool) {
	for _, p := range r.Meta.Phases {
		if p.Name == name {
			return p, true
		}
	}
	return rundata.PhaseSpan{}, false
}

// PhaseSummary returns the merged statistics of endpoint ep over phase.
func (r *Run) PhaseSummary(ep, phase string) (rundata.PhaseStats, bool) {
	for _, p := range r.Phases {
		if p.Endpoint == ep && p.Phase == phase {
			return p, true
		}
	}
	return rundata.PhaseStats{}, false
}

// Origin is time zero of the run's plots: the attack start recorded in the
// windows, else the first phase start, else the run start.
func (r *Run) Origin() time.Time {
	if len(r.Windows) > 0 {
		w := r.Windows[0]
		for _, x := range r.Windows {
			if x.Start.Add(-x.Offset).Before(w.Start.Add(-w.Offset)) {
				w = x
			}
		}
		return w.Start.Add(-w.Offset)
	}
	if len(r.Meta.Phases) > 0 {
		return r.Meta.Phases[0].Start
	}
	return r.Meta.Started
}

// FaultStart is the start of the "fault" phase, else the first fault "set"
// event; ok is false when the run had neither.
func (r *Run) FaultStart() (time.Time, bool) {
	if p, ok := r.PhaseSpan(rundata.PhaseFault); ok {
		return p.Start, true
	}
	for _, f := range r.Meta.Faults {
		if f.Action == "set" {
			return f.Time, true
		}
	}
	return time.Time{}, false
}

// FaultEnd is the end of the fault phase, else the first "clear" after the
// fault start, else the end of the last window.
func (r *Run) FaultEnd() time.Time {
	if p, ok := r.PhaseSpan(rundata.PhaseFault); ok {
		return p.End
	}
	fs, _ := r.FaultStart()
	for _, f := range r.Meta.Faults {
		if f.Action == "clear" && f.Time.After(fs) {
			return f.Time
		}
	}
	return r.End()
}

// End is the end of the last window, else of the last phase.
func (r *Run) End() time.Time {
	var t time.Time
	for _, w := range r.Windows {
		if e := w.Start.Add(w.Duration); e.After(t) {
			t = e
		}
	}
	if t.IsZero() && len(r.Meta.Phases) > 0 {
		t = r.Meta.Phases[len(r.Meta.Phases)-1].End
	}
	return t
}

// PhaseSeconds is the length of phase in seconds, from its span or else
// from its windows; 0 when unknown.
func (r *Run) PhaseSeconds(phase string) float64 {
	if p, ok := r.PhaseSpan(phase); ok && p.End.After(p.Start) {
		return p.End.Sub(p.Start).Seconds()
	}
	seen := map[int]time.Duration{}
	for _, w := range r.Windows {
		if w.Phase == phase {
			seen[w.Index] = w.Duration
		}
	}
	var d time.Duration
	for _, v := range seen {
		d += v
	}
	return d.Seconds()
}

// EndpointWindows returns ep's windows in index order.
func (r *Run) EndpointWindows(ep string) []rundata.Window {
	var out []rundata.Window
	for _, w := range r.Windows {
		if w.Endpoint == ep {
			out = append(out, w)
		}
	}
	return out
}

// Endpoints returns the endpoint names of the run, sorted.
func (r *Run) Endpoints() []string {
	set := map[string]bool{}
	for _, e := range r.Meta.Endpoints {
		set[e.Name] = true
	}
	for _, w := range r.Windows {
		set[w.Endpoint] = true
	}
	delete(set, rundata.CanaryEndpoint) // the noise floor, not an endpoint of the service
	return slices.Sorted(maps.Keys(set))
}

// EndpointInfo returns the metadata of ep (zero value when unknown).
func (r *Run) EndpointInfo(ep string) rundata.EndpointInfo {
	for _, e := range r.Meta.Endpoints {
		if e.Name == ep {
			return e
		}
	}
	return rundata.EndpointInfo{Name: ep}
}

// Point is one sample of a metric series.
type Point struct {
	Time  time.Time
	Value float64
}

// Metric returns the series of one exact key of component's samples.
func (r *Run) Metric(component, key string) []Point {
	var out []Point
	for _, s := range r.Metrics {
		if s.Component != component {
			continue
		}
		if v, ok := s.Values[key]; ok {
			out = append(out, Point{s.Time, v})
		}
	}
	return out
}

// MetricSum returns, per sample of component, the sum over every series of
// metric name whose labels include all of want.
func (r *Run) MetricSum(component, name string, want ...rundata.Label) []Point {
	var out []Point
	for _, s := range r.Metrics {
		if s.Component != component {
			continue
		}
		if sum, found := rundata.Sum(s.Values, name, want...); found {
			out = append(out, Point{s.Time, sum})
		}
	}
	return out
}

// PoolKey is the series key of a per-pool gauge.
func PoolKey(metric, pool string) string { return rundata.Key(metric, rundata.L("pool", pool)) }

// PoolNames returns the pools of the run from meta, else from the metrics.
func (r *Run) PoolNames() []string {
	set := map[string]bool{}
	for _, p := range r.Meta.Pools {
		set[p.Name] = true
	}
	if len(set) == 0 {
		for _, s := range r.Metrics {
			for _, p := range rundata.LabelValues(s.Values, rundata.MetricPoolLimit, "pool") {
				set[p] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// PoolInfo returns the metadata of pool (zero value when unknown).
func (r *Run) PoolInfo(pool string) rundata.PoolInfo {
	for _, p := range r.Meta.Pools {
		if p.Name == pool {
			return p
		}
	}
	return rundata.PoolInfo{Name: pool}
}

// ValueAt returns the value of the latest point at or before t.
func ValueAt(s []Point, t time.Time) (float64, bool) {
	i := sort.Search(len(s), func(i int) bool { return s[i].Time.After(t) })
	if i == 0 {
		return 0, false
	}
	return s[i-1].Value, true
}

// DeltaOver is the increase of a counter series between from and to.
func DeltaOver(s []Point, from, to time.Time) (float64, bool) {
	a, okA := ValueAt(s, from)
	b, okB := ValueAt(s, to)
	if !okB {
		return 0, false
	}
	if !okA {
		if len(s) == 0 {
			return 0, false
		}
		a = s[0].Value
	}
	return b - a, true
}
