package analysis

import (
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// phaseSpan returns the span named name, if the run recorded it.
func (r *Run) phaseSpan(name string) (rundata.PhaseSpan, bool) {
	for _, p := range r.Meta.Phases {
		if p.Name == name {
			return p, true
		}
	}
	return rundata.PhaseSpan{}, false
}

// phaseSummary returns the merged statistics of endpoint ep over phase.
func (r *Run) phaseSummary(ep, phase string) (rundata.PhaseStats, bool) {
	for _, p := range r.Phases {
		if p.Endpoint == ep && p.Phase == phase {
			return p, true
		}
	}
	return rundata.PhaseStats{}, false
}

// origin is time zero of the run's plots: the attack start recorded in the
// windows, else the first phase start, else the run start.
func (r *Run) origin() time.Time {
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

// faultStart is the start of the "fault" phase, else the first fault "set"
// event; ok is false when the run had neither.
func (r *Run) faultStart() (time.Time, bool) {
	if p, ok := r.phaseSpan(rundata.PhaseFault); ok {
		return p.Start, true
	}
	for _, f := range r.Meta.Faults {
		if f.Action == "set" {
			return f.Time, true
		}
	}
	return time.Time{}, false
}

// faultEnd is the end of the fault phase, else the first "clear" after the
// fault start, else the end of the last window.
func (r *Run) faultEnd() time.Time {
	if p, ok := r.phaseSpan(rundata.PhaseFault); ok {
		return p.End
	}
	fs, _ := r.faultStart()
	for _, f := range r.Meta.Faults {
		if f.Action == "clear" && f.Time.After(fs) {
			return f.Time
		}
	}
	return r.end()
}

// end is the end of the last window, else of the last phase.
func (r *Run) end() time.Time {
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

// phaseSeconds is the length of phase in seconds, from its span or else
// from its windows; 0 when unknown.
func (r *Run) phaseSeconds(phase string) float64 {
	if p, ok := r.phaseSpan(phase); ok && p.End.After(p.Start) {
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

// endpointWindows returns ep's windows in index order.
func (r *Run) endpointWindows(ep string) []rundata.Window {
	var out []rundata.Window
	for _, w := range r.Windows {
		if w.Endpoint == ep {
			out = append(out, w)
		}
	}
	return out
}

// endpoints returns the endpoint names of the run, sorted.
func (r *Run) endpoints() []string {
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

// endpointInfo returns the metadata of ep (zero value when unknown).
func (r *Run) endpointInfo(ep string) rundata.EndpointInfo {
	for _, e := range r.Meta.Endpoints {
		if e.Name == ep {
			return e
		}
	}
	return rundata.EndpointInfo{Name: ep}
}

// point is one sample of a metric series.
type point struct {
	t time.Time
	v float64
}

// metric returns the series of one exact key of component's samples.
func (r *Run) metric(component, key string) []point {
	var out []point
	for _, s := range r.Metrics {
		if s.Component != component {
			continue
		}
		if v, ok := s.Values[key]; ok {
			out = append(out, point{s.Time, v})
		}
	}
	return out
}

// metricSum returns, per sample of component, the sum over every series of
// metric name whose labels include all of want.
func (r *Run) metricSum(component, name string, want ...rundata.Label) []point {
	var out []point
	for _, s := range r.Metrics {
		if s.Component != component {
			continue
		}
		if sum, found := rundata.Sum(s.Values, name, want...); found {
			out = append(out, point{s.Time, sum})
		}
	}
	return out
}

// poolKey is the series key of a per-pool gauge.
func poolKey(metric, pool string) string { return rundata.Key(metric, rundata.L("pool", pool)) }

// poolNames returns the pools of the run from meta, else from the metrics.
func (r *Run) poolNames() []string {
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

// poolInfo returns the metadata of pool (zero value when unknown).
func (r *Run) poolInfo(pool string) rundata.PoolInfo {
	for _, p := range r.Meta.Pools {
		if p.Name == pool {
			return p
		}
	}
	return rundata.PoolInfo{Name: pool}
}

// valueAt returns the value of the latest point at or before t.
func valueAt(s []point, t time.Time) (float64, bool) {
	i := sort.Search(len(s), func(i int) bool { return s[i].t.After(t) })
	if i == 0 {
		return 0, false
	}
	return s[i-1].v, true
}

// deltaOver is the increase of a counter series between from and to.
func deltaOver(s []point, from, to time.Time) (float64, bool) {
	a, okA := valueAt(s, from)
	b, okB := valueAt(s, to)
	if !okB {
		return 0, false
	}
	if !okA {
		if len(s) == 0 {
			return 0, false
		}
		a = s[0].v
	}
	return b - a, true
}
