package verdict

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/render/words"
	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// AuditRule documents how an audit's cells are classed; the report prints
// it.
const AuditRule = "a cell is the endpoint's numbers in the fault phase of the cell's valid runs (means over repeats). Its p99 rise is how far its fault-phase p99 rose above the lower of its run's baseline p99 and the control run's fault-phase p99 (the same endpoint without a fault: a baseline inflated by stragglers hides no rise), in T. It is DEGRADED when the endpoint does not call the dependency (by the measured call graph, else the declared one) and its p99 rose by at least degraded_p99_rise_t × T, or its error rate reached degraded_error_rate — each threshold raised by the control run's noise (how far the same endpoint's p99 rose between its phases and differed between the control's runs; its error rate); ISOLATED when it does not call it and stayed below; EXPECTED when it calls it (degraded or not); ABORTED when a stop condition removed the fault; INVALID when no run of the cell was valid; SKIPPED when the audit stopped before it. A cell whose runs disagree says how many of them degraded. A DEGRADED cell is a finding, named with the first resource the exhaustion ranking saw run out among those its endpoint draws on (a limit inferred from the proxies over a dependency it calls, for a service without pool metrics), and with what its failures were as the service's answers told (the classification rules)"

// BuildAudit maps a blast-radius audit's runs, one map per mode (in the
// order of the runs), from the runs' summaries in s. It returns nil when
// the experiment is not an audit.
func BuildAudit(exp *rundir.Experiment, s *Summary) []AuditMap {
	if exp.Audit == nil {
		return nil
	}
	sums := map[string]measure.RunSummary{}
	for _, r := range s.Runs {
		sums[r.ID] = r
	}
	var modes []string
	for _, e := range exp.Index.Runs {
		if !slices.Contains(modes, e.Mode) {
			modes = append(modes, e.Mode)
		}
	}
	var out []AuditMap
	for _, m := range modes {
		out = append(out, buildAuditMap(exp, sums, m))
	}
	return out
}

// auditRuns are the runs of one cell: every run, and the usable ones with
// their summaries.
type auditRuns struct {
	all    []*rundir.Run
	usable []*rundir.Run
	sums   []measure.RunSummary
}

func cellRuns(exp *rundir.Experiment, sums map[string]measure.RunSummary, cond, mode string) auditRuns {
	var c auditRuns
	for _, r := range exp.Runs {
		if r.Entry.Condition != cond || r.Entry.Mode != mode {
			continue
		}
		c.all = append(c.all, r)
		if s, ok := sums[r.Entry.ID]; ok && s.Usable() {
			c.usable = append(c.usable, r)
			c.sums = append(c.sums, s)
		}
	}
	return c
}

// mean is the mean of the defined values of f over xs (NaN if none).
func mean[T any](xs []T, f func(T) measure.Num) measure.Num {
	sum, n := 0.0, 0
	for _, x := range xs {
		if v := float64(f(x)); !math.IsNaN(v) && !math.IsInf(v, 0) {
			sum += v
			n++
		}
	}
	if n == 0 {
		return measure.Undefined
	}
	return measure.Num(sum / float64(n))
}

func buildAuditMap(exp *rundir.Experiment, sums map[string]measure.RunSummary, mode string) AuditMap {
	a := *exp.Audit
	m := AuditMap{Experiment: exp.Index.Experiment, Mode: mode, Config: a, TimeoutMs: measure.Undefined, Columns: a.Columns, CallGraph: exp.CallGraph,
		Arrivals: exp.Arrivals, Findings: []AuditFinding{}}
	// Rows: the endpoints as the runs list them (the spec's order).
	declared := map[string][]string{} // the service's own say: endpoint → its dependency
	for _, r := range exp.Runs {
		if r.Entry.Mode != mode || len(r.Meta.Endpoints) == 0 {
			continue
		}
		for _, e := range r.Meta.Endpoints {
			m.Endpoints = append(m.Endpoints, e.Name)
			if e.Dependency != "" {
				declared[e.Name] = []string{e.Dependency}
			}
		}
		m.TimeoutMs = measure.Num(measure.Millis(r.Meta.Timeout))
		break
	}
	for e, deps := range a.Calls { // the audit's declaration, endpoint by endpoint
		declared[e] = deps
	}
	if len(declared) > 0 {
		m.Declared = declared
	}
	calls := declared
	if g := exp.CallGraph; g != nil {
		calls = map[string][]string{}
		for _, e := range m.Endpoints {
			calls[e] = g.Edges[e]
			if why, failed := g.Failed[e]; failed {
				// No request of it was answered: its calls were not seen.
				calls[e] = declared[e]
				m.GraphDiffs = append(m.GraphDiffs, fmt.Sprintf("/%s: no calibration request answered 2xx (%s); its declared calls are used", e, why))
			}
		}
		m.GraphDiffs = append(m.GraphDiffs, graphDiffs(m.Endpoints, calls, declared)...)
	}
	riseT, errRate := a.DegradedP99RiseT, a.DegradedErrorRate

	ctl := cellRuns(exp, sums, rundata.AuditControl, mode)
	if len(ctl.usable) == 0 && len(a.Critical) > 0 {
		v := "control run: no valid run, so the thresholds are not raised by the service's own noise"
		m.Violations = append(m.Violations, v)
		m.Unmeasured = append(m.Unmeasured, v)
	}
	thrRise, thrErr := map[string]float64{}, map[string]float64{}
	for _, e := range m.Endpoints {
		c := AuditControl{Endpoint: e,
			P99Ms:     mean(ctl.sums, func(s measure.RunSummary) measure.Num { return s.Endpoint(e).FaultP99Ms }),
			P99RiseT:  mean(ctl.sums, func(s measure.RunSummary) measure.Num { return s.P99RiseT(e) }),
			ErrorRate: mean(ctl.sums, func(s measure.RunSummary) measure.Num { return s.Endpoint(e).FaultErrorRate }),
			NoiseT:    controlNoise(ctl.sums, e),
		}
		m.Control = append(m.Control, c)
		thrRise[e], thrErr[e] = riseT+positive(c.NoiseT), errRate+positive(c.ErrorRate)
	}
	tells := failureTells(exp)

	for i, e := range m.Endpoints {
		row := make([]AuditCell, len(m.Columns))
		for j, col := range m.Columns {
			cr := cellRuns(exp, sums, col.Condition, mode)
			cell := AuditCell{Calls: callsColumn(exp.CallGraph, calls, e, col), Runs: len(cr.usable),
				BaselineP99Ms: measure.Undefined, FaultP99Ms: measure.Undefined, P99RiseT: measure.Undefined,
				ErrorRate: measure.Undefined, ErrorPoints: measure.Undefined, TimeToDegradeS: measure.Undefined}
			ownAbort := false // a stop condition met by e's own results
			for _, r := range cr.all {
				ab := r.Meta.Abort
				if ab == nil {
					continue
				}
				if cell.Aborted == "" || ab.Endpoint == e && !ownAbort {
					cell.Aborted = fmt.Sprintf("%s: %s (fault removed %s after)", ab.Rule, ab.Trigger, fmtGap(ab))
				}
				ownAbort = ownAbort || ab.Endpoint == e
			}
			if len(cr.usable) > 0 {
				ctlP99 := float64(m.Control[i].P99Ms)
				rise := func(s measure.RunSummary) measure.Num { return riseOver(s, e, ctlP99) }
				cell.BaselineP99Ms = mean(cr.sums, func(s measure.RunSummary) measure.Num { return s.Endpoint(e).BaselineP99Ms })
				cell.FaultP99Ms = mean(cr.sums, func(s measure.RunSummary) measure.Num { return s.Endpoint(e).FaultP99Ms })
				cell.P99RiseT = mean(cr.sums, rise)
				cell.ErrorRate = mean(cr.sums, func(s measure.RunSummary) measure.Num { return s.Endpoint(e).FaultErrorRate })
				cell.ErrorPoints = mean(cr.sums, func(s measure.RunSummary) measure.Num {
					return 100 * (s.Endpoint(e).FaultErrorRate - phaseErrorRate(s.Endpoint(e), rundata.PhaseBaseline))
				})
				cell.TimeToDegradeS = mean(cr.usable, func(r *rundir.Run) measure.Num { return measure.FirstDegradedS(r, e, thrRise[e], thrErr[e], ctlP99) })
				cell.Degraded = float64(cell.P99RiseT) >= thrRise[e] || float64(cell.ErrorRate) >= thrErr[e]
				for _, s := range cr.sums {
					if float64(rise(s)) >= thrRise[e] || float64(s.Endpoint(e).FaultErrorRate) >= thrErr[e] {
						cell.DegradedRuns++
					}
				}
				if h := measure.ResourceOf(cr.sums[0], cr.usable[0], e); h.Resource != "" {
					cell.Resource = strings.TrimSpace(h.Resource + " " + h.Name)
					cell.Detail = h.Detail
				}
				cell.Failures = failuresOf(cr.sums, e, tells)
			}
			if len(cr.all) > 0 {
				cell.Predicted = predictedClass(cr.all[0], e, cell.Calls)
			}
			switch {
			case cell.Aborted != "":
				cell.Class = CellAborted
			case len(cr.all) == 0:
				cell.Class = CellSkipped
			case len(cr.usable) == 0:
				cell.Class = CellInvalid
				cell.Detail = cr.all[0].Meta.Error
				if s, ok := sums[cr.all[0].Entry.ID]; ok {
					cell.Detail = s.Exclusion()
				}
			case cell.Calls:
				cell.Class = CellExpected
			case cell.Degraded:
				cell.Class = CellDegraded
			default:
				cell.Class = CellIsolated
			}
			if (cell.Class == CellDegraded || cell.Class == CellIsolated) && cell.Predicted != "" && cell.Predicted != cell.Class {
				m.Mispredicted = append(m.Mispredicted, fmt.Sprintf("/%s × %s %s: %s, predicted %s", e, col.Target(), col.Fault, cell.Class, cell.Predicted))
			}
			if cell.Class == CellDegraded {
				m.Findings = append(m.Findings, finding(e, col, cell))
			}
			if slices.Contains(a.Critical, e) && !cell.Calls && cell.Class != CellIsolated {
				v := fmt.Sprintf("/%s × %s %s: %s", e, col.Target(), col.Fault, cell.Class)
				switch {
				case cell.Class == CellAborted && ownAbort:
					v += " (its own stop condition)"
				case cell.Class == CellAborted:
					v += " (stopped before it was measured)"
					m.Unmeasured = append(m.Unmeasured, v)
				case cell.Class != CellDegraded:
					m.Unmeasured = append(m.Unmeasured, v)
				}
				m.Violations = append(m.Violations, v)
			}
			row[j] = cell
		}
		m.Cells = append(m.Cells, row)
	}
	return m
}

// predictedClass is the class the run's layout predicts for endpoint ep:
// EXPECTED when it calls the faulted dependency, else DEGRADED when its
// pool's predicted fault-phase demand exceeds the pool's size (Little's
// law, as validate previews it), else ISOLATED; empty when the run's
// metadata has no pool of ep (a service of the user's own).
func predictedClass(r *rundir.Run, ep string, calls bool) string {
	if calls {
		return CellExpected
	}
	pool := measure.EndpointPool(r, ep)
	for _, p := range r.Meta.Pools {
		if p.Name != pool || p.Limit <= 0 {
			continue
		}
		if p.PredictedExhaustion > 0 || p.PredictedDemand[rundata.PhaseFault] > float64(p.Limit) {
			return CellDegraded
		}
		return CellIsolated
	}
	return ""
}

// callsColumn reports whether endpoint e is what column col's condition
// acts through: an endpoint whose load it raises (col.Load), or one that
// calls what it faults: its dependency, or for a column of a class (a
// statement class, a route class), that class's calls, at least rundata.MinCallsPerRequest
// per request as the calibration measured them. An endpoint that calls the dependency but
// whose classes were not measured is taken to run the class: no finding
// rests on a class the harness did not see it leave alone.
func callsColumn(g *rundata.CallGraph, calls map[string][]string, e string, col AuditColumn) bool {
	if slices.Contains(col.Load, e) {
		return true // its own load is the column's cause
	}
	if col.Dependency == "" {
		return false
	}
	dep := slices.Contains(calls[e], col.Dependency)
	if col.Class == "" || !dep {
		return dep
	}
	n, ok := g.ClassCalls(e, col.Dependency, col.Class)
	return !ok || n >= rundata.MinCallsPerRequest
}

// finding describes a DEGRADED cell in one line.
func finding(e string, col AuditColumn, c AuditCell) AuditFinding {
	var b strings.Builder
	if col.LoadOnly() {
		fmt.Fprintf(&b, "/%s degraded when the %s rose (%s), which is not its own: p99 %s → %s ms (%+.2f T)",
			e, col.Target(), col.Fault, measure.FmtNum(c.BaselineP99Ms), measure.FmtNum(c.FaultP99Ms), float64(c.P99RiseT))
	} else {
		fmt.Fprintf(&b, "/%s degraded when %s was %s, which it does not call: p99 %s → %s ms (%+.2f T)",
			e, col.Target(), col.Fault, measure.FmtNum(c.BaselineP99Ms), measure.FmtNum(c.FaultP99Ms), float64(c.P99RiseT))
	}
	if !math.IsNaN(float64(c.TimeToDegradeS)) {
		fmt.Fprintf(&b, " after %.2f s", float64(c.TimeToDegradeS))
	}
	fmt.Fprintf(&b, ", errors %s %%", words.FmtHuman(100*float64(c.ErrorRate)))
	if c.Failures != "" {
		b.WriteString(": " + c.Failures)
	}
	if c.Runs > 1 && c.DegradedRuns < c.Runs {
		fmt.Fprintf(&b, "; in %d of %d runs", c.DegradedRuns, c.Runs)
	}
	if c.Resource == "" {
		b.WriteString("; no bounded resource the harness observes ran out")
	}
	return AuditFinding{Endpoint: e, Dependency: col.Dependency, Class: col.Class, Fault: col.Fault, Condition: col.Condition, Summary: b.String(), Resource: c.Resource}
}

// graphDiffs lists where the measured call graph and the declared one
// disagree, for the endpoints that declare their calls (one that declares
// none leaves it to the measurement).
func graphDiffs(endpoints []string, measured, declared map[string][]string) []string {
	var out []string
	for _, e := range endpoints {
		if _, ok := declared[e]; !ok {
			continue
		}
		for _, d := range measured[e] {
			if !slices.Contains(declared[e], d) {
				out = append(out, fmt.Sprintf("/%s calls %s (measured), which is not declared", e, d))
			}
		}
		for _, d := range declared[e] {
			if !slices.Contains(measured[e], d) {
				out = append(out, fmt.Sprintf("/%s is declared to call %s, which no calibration request reached", e, d))
			}
		}
	}
	return out
}

// phaseErrorRate is the endpoint's error rate in phase (0 when unknown).
func phaseErrorRate(e measure.EndpointStats, phase string) measure.Num {
	for _, p := range e.Phases {
		if p.Phase == phase && !math.IsNaN(float64(p.ErrorRate)) {
			return p.ErrorRate
		}
	}
	return 0
}

// positive is x, or 0 when x is negative or undefined.
func positive(x measure.Num) float64 {
	if v := float64(x); v > 0 && !math.IsInf(v, 0) {
		return v
	}
	return 0
}

// fmtGap is how long after the condition was met the faults were gone.
func fmtGap(a *rundata.Abort) string {
	if a.Cleared.IsZero() {
		return "never: removing a fault failed"
	}
	return a.Cleared.Sub(a.At).Round(100_000).String()
}

// riseOver is endpoint e's fault-phase p99 rise in run s, in T, over the
// lower of its baseline p99 and ctlP99 (the control run's fault-phase p99,
// NaN if unknown): a baseline p99 inflated by a few stragglers hides no
// rise that the control shows.
func riseOver(s measure.RunSummary, e string, ctlP99 float64) measure.Num {
	own := s.P99RiseT(e)
	t := float64(s.TimeoutMs)
	fault := float64(s.Endpoint(e).FaultP99Ms)
	if math.IsNaN(ctlP99) || math.IsNaN(fault) || !(t > 0) {
		return own
	}
	over := measure.Num((fault - ctlP99) / t)
	if math.IsNaN(float64(own)) || over > own {
		return over
	}
	return own
}

// controlNoise is how much endpoint e's p99 moves without a fault, in T:
// the most any control run's fault-phase p99 rose above its baseline p99
// (a baseline above it, inflated by stragglers, is no noise of the fault
// phase), or the control runs' fault-phase p99s differ from one another;
// undefined without a control run.
func controlNoise(runs []measure.RunSummary, e string) measure.Num {
	noise, n := 0.0, 0
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range runs {
		t := float64(s.TimeoutMs)
		if !(t > 0) {
			continue
		}
		if r := float64(s.P99RiseT(e)); !math.IsNaN(r) {
			noise, n = math.Max(noise, r), n+1
		}
		if f := float64(s.Endpoint(e).FaultP99Ms); !math.IsNaN(f) {
			lo, hi = math.Min(lo, f/t), math.Max(hi, f/t)
		}
	}
	if hi > lo {
		noise, n = math.Max(noise, hi-lo), n+1
	}
	if n == 0 {
		return measure.Undefined
	}
	return measure.Num(noise)
}
