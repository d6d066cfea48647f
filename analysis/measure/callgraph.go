package measure

import (
	"maps"
	"math"
	"slices"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// callGraph reads a run's call graph: who calls which dependency, how often,
// and the demand that puts on it.
type callGraph struct{ run *rundir.Run }

// calls is what each endpoint of the run calls: dependency → calls per
// request. An audit's measured call graph decides for every endpoint it
// measured (its calls per request as the calibration counted them); an
// endpoint it did not measure (no graph, or none of its requests answered)
// calls what audit.calls declares, else its own declared dependency, once
// per request.
func (cg callGraph) calls() map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	g := cg.run.CallGraph
	for _, e := range cg.run.Meta.Endpoints {
		if g != nil {
			if _, failed := g.Failed[e.Name]; !failed {
				if m, ok := measuredCalls(g, e.Name); ok {
					out[e.Name] = m
					continue
				}
			}
		}
		m := map[string]float64{}
		if ds, ok := cg.run.DeclaredCalls[e.Name]; ok {
			for _, d := range ds {
				m[d] = 1
			}
		} else if e.Dependency != "" {
			m[e.Dependency] = 1
		}
		out[e.Name] = m
	}
	return out
}

// measuredCalls is endpoint ep's edges in g with their calls per request
// (1 where the graph has an edge but no count); false when g did not
// measure ep.
func measuredCalls(g *rundata.CallGraph, ep string) (map[string]float64, bool) {
	var counts map[string]float64
	found := false
	for _, ec := range g.Endpoints {
		if ec.Endpoint == ep {
			counts, found = ec.Calls, true
		}
	}
	edges, hasEdges := g.Edges[ep]
	if !found && !hasEdges {
		return nil, false
	}
	m := map[string]float64{}
	for _, d := range edges {
		n := counts[d]
		if !(n >= rundata.MinCallsPerRequest) || math.IsInf(n, 0) {
			n = 1
		}
		m[d] = n
	}
	return m, true
}

// dependencies are the run's dependencies that some endpoint calls (calls),
// in meta order: each endpoint's declared dependency first, then the
// others it calls, sorted.
func (cg callGraph) dependencies() []string {
	calls := cg.calls()
	var out []string
	add := func(d string) {
		if d != "" && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	for _, e := range cg.run.Meta.Endpoints {
		if _, ok := calls[e.Name][e.Dependency]; ok {
			add(e.Dependency)
		}
		for _, d := range slices.Sorted(maps.Keys(calls[e.Name])) {
			add(d)
		}
	}
	return out
}

// callersOf returns the endpoints that call any of deps (calls), in meta
// order.
func (cg callGraph) callersOf(deps []string) []string {
	calls := cg.calls()
	var out []string
	for _, e := range cg.run.Meta.Endpoints {
		if slices.ContainsFunc(deps, func(d string) bool { _, ok := calls[e.Name][d]; return ok }) {
			out = append(out, e.Name)
		}
	}
	return out
}

// faultedDependencies are the dependencies the run's condition set faults
// on.
func (cg callGraph) faultedDependencies() []string {
	var out []string
	for _, f := range cg.run.Meta.Faults {
		if f.Action == rundata.FaultSet && len(f.Faults) > 0 && !slices.Contains(out, f.Dependency) {
			out = append(out, f.Dependency)
		}
	}
	return out
}

// demandOn predicts, by Little's law, the calls in flight to the
// dependencies deps in the baseline and the fault phase: for each, every
// endpoint that calls it (calls) at its phase's rate × its calls per
// request × the dependency's holding time, measured by its proxy in the
// baseline (with the condition's faults added in the fault phase, capped
// at T). In the fault phase an endpoint that also calls another, faulted
// dependency is left out of a healthy one's demand: a call to the faulted
// one that fails first may spare it, so its demand there is not known to
// have been offered. false when a dependency has no caller or its proxy
// was not sampled in the baseline.
func (cg callGraph) demandOn(deps []string) (map[string]float64, bool) {
	base, ok := cg.run.PhaseSpan(rundata.PhaseBaseline)
	if !ok || len(deps) == 0 {
		return nil, false
	}
	t := cg.run.Meta.Timeout.Seconds()
	calls := cg.calls()
	faulted := cg.faultedDependencies()
	out := map[string]float64{}
	for _, d := range deps {
		w := proxyLatency{cg.run}.proxyHolding(d, base.Start, base.End)
		if math.IsNaN(w) {
			return nil, false
		}
		callers := 0
		for _, e := range cg.run.Meta.Endpoints {
			n, ok := calls[e.Name][d]
			if !ok {
				continue
			}
			callers++
			spared := !slices.Contains(faulted, d) && slices.ContainsFunc(faulted, func(f string) bool { _, ok := calls[e.Name][f]; return ok })
			for _, ph := range []string{rundata.PhaseBaseline, rundata.PhaseFault} {
				ps, ok := cg.run.PhaseSummary(e.Name, ph)
				if !ok {
					continue
				}
				hold := w
				if ph == rundata.PhaseFault {
					if spared {
						continue
					}
					hold = proxyLatency{cg.run}.injected(d, e.Name, w, t)
				}
				out[ph] += ps.TargetRate * n * hold
			}
		}
		if callers == 0 {
			return nil, false
		}
	}
	return out, true
}
