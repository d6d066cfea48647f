package verdict

import (
	"maps"
	"slices"
	"sort"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// Outcome is a verdict's result.
type Outcome string

// Verdict outcomes.
const (
	Supported    Outcome = "SUPPORTED"
	NotSupported Outcome = "NOT SUPPORTED"
	// Inconclusive: a deciding number's confidence interval straddles its
	// threshold and is wider than MaxRelativeSpread of its mean, or a
	// deciding number could not be measured.
	Inconclusive Outcome = "INCONCLUSIVE"
	// Invalid: a run the verdict needs failed its validity check (meta.Valid
	// false); nothing can be concluded.
	Invalid Outcome = "INVALID"
	// Skipped: the matrix has no complete run of a condition × mode the
	// verdict needs.
	Skipped Outcome = "SKIPPED"
)

// Summary is summary.json: everything the report says, as data. It is built
// by Evaluate and is deterministic for the same input.
type Summary struct {
	Experiment   string               `json:"experiment"`
	Expectations rundata.Expectations `json:"expectations"`
	Runs         []measure.RunSummary `json:"runs"`
	Cells        []Cell               `json:"cells"`
	Verdicts     []Verdict            `json:"verdicts"`
	Little       []LittleRow          `json:"littles_law"`
	// Sizing is the sizing curve of a sweep named by expectations.sizing.
	Sizing *SizingCurve `json:"sizing,omitempty"`
	// RepeatsNeeded, for repeats: auto, is how many repeats each checked
	// verdict needed to be clear of its threshold.
	RepeatsNeeded []RepeatNeed `json:"repeats_needed,omitempty"`
	// ExhaustionRules are the rules behind RunSummary.Exhausted.
	ExhaustionRules []string `json:"exhaustion_rules"`
	// Images lists the figures written next to the summary, relative paths.
	Images []string `json:"images,omitempty"`
	// Damaged lists the runs whose data are damaged ("run: file:line: what");
	// they are not evidence, and `--check` fails as a harness error.
	Damaged []string `json:"damaged,omitempty"`
	// LeftOut summarises the runs no verdict uses and the attempts run
	// again; nil when there are none.
	LeftOut *LeftOut `json:"left_out,omitempty"`
	// Notices are what a reader must know before trusting the verdicts
	// (see Summary.Notices).
	Notices []string `json:"notices,omitempty"`
	// Audits are a blast-radius audit's maps, one per mode (BuildAudit);
	// nil when the experiment is not an audit.
	Audits []AuditMap `json:"audits,omitempty"`
}

// Cell is one condition × mode of the matrix, aggregated over its usable
// repeats: complete, sound and valid. The others are listed in Excluded with
// the reason.
type Cell struct {
	Condition        string           `json:"condition"`
	Mode             string           `json:"mode"`
	Runs             []string         `json:"runs"`
	Excluded         []Exclusion      `json:"excluded,omitempty"`
	VictimP99Ms      measure.Estimate `json:"victim_fault_p99_ms"`
	VictimErrorRate  measure.Estimate `json:"victim_fault_error_rate"`
	CulpritP99Ms     measure.Estimate `json:"culprit_fault_p99_ms"`
	CulpritErrorRate measure.Estimate `json:"culprit_fault_error_rate"`
	CulpritOKRate    measure.Estimate `json:"culprit_fault_ok_per_s"`
	TimeToDegradeT   measure.Estimate `json:"time_to_degrade_t"`
	// Phases are each endpoint's p50 and p99 in each phase, means over the
	// cell's runs.
	Phases []CellPhase `json:"phases"`

	UsedRuns []measure.RunSummary `json:"-"`
	excluded []measure.RunSummary
}

// CellPhase is one endpoint's numbers in one phase of a cell.
type CellPhase struct {
	Endpoint  string           `json:"endpoint"`
	Phase     string           `json:"phase"`
	P50Ms     measure.Estimate `json:"p50_ms"`
	P99Ms     measure.Estimate `json:"p99_ms"`
	ErrorRate measure.Estimate `json:"error_rate"`
}

// Exclusion is a run a cell does not use, and why.
type Exclusion struct {
	Run string `json:"run"`
	Why string `json:"why"`
}

// Measure is one number a verdict reports.
type Measure struct {
	Name  string           `json:"name"`
	Value measure.Estimate `json:"value"`
	Unit  string           `json:"unit"`
	// Op and Threshold state the condition the number must meet ("<=", ">=",
	// ">"); empty Op for a number shown for information only.
	Op        string       `json:"op,omitempty"`
	Threshold *measure.Num `json:"threshold,omitempty"`
	// Result is "pass", "fail", "uncertain" or "undefined" for deciding
	// measures.
	Result string `json:"result,omitempty"`
}

// Verdict judges one prediction of docs/design.md §1.
type Verdict struct {
	Name     string    `json:"name"`
	Claim    string    `json:"claim"`
	Outcome  Outcome   `json:"outcome"`
	Reason   string    `json:"reason"`
	Measures []Measure `json:"measures"`
	// Runs are the runs the verdict used; Excluded those of its cells it
	// could not use, with the reason.
	Runs     []string    `json:"runs"`
	Excluded []Exclusion `json:"excluded,omitempty"`
}

// LittleRow is the Little's-law comparison for one pool of one cell.
type LittleRow struct {
	Condition            string           `json:"condition"`
	Mode                 string           `json:"mode"`
	Pool                 string           `json:"pool"`
	Limit                int              `json:"limit"`
	PredictedDemand      measure.Estimate `json:"predicted_demand"`
	MeasuredDemand       measure.Estimate `json:"measured_demand"`
	DemandRatio          measure.Estimate `json:"demand_ratio"`
	PredictedExhaustionS measure.Estimate `json:"predicted_exhaustion_s"`
	MeasuredExhaustionS  measure.Estimate `json:"measured_exhaustion_s"`
	ExhaustionRatio      measure.Estimate `json:"exhaustion_ratio"`
}

// Evaluate computes per-run numbers, per-cell estimates, Little's-law rows
// and the verdicts under ex, which must be complete (a spec's, or
// WithDefaults of a partial one): a zero threshold is taken as zero. It
// does not touch the file system.
func Evaluate(exp *rundir.Experiment, ex rundata.Expectations) Summary {
	s := evaluate(exp, ex)
	if exp.AutoRepeats {
		s.RepeatsNeeded = repeatsNeeded(exp, ex)
	}
	return s
}

func evaluate(exp *rundir.Experiment, ex rundata.Expectations) Summary {
	s := Summary{Experiment: exp.Index.Experiment, Expectations: ex, ExhaustionRules: measure.WithCPURules(measure.ExhaustionRulesOf(exp.Runs), exp.Runs)}
	for _, r := range exp.Runs {
		s.Runs = append(s.Runs, measure.Summarize(r, ex))
	}
	s.Cells = buildCells(s.Runs, ex)
	s.Little = buildLittle(s.Cells)
	s.Sizing = buildSizing(s.Runs, s.Cells, ex)
	if exp.Audit == nil { // an audit's result is its map, not the predictions
		s.Verdicts = judge(&s)
	}
	for i, v := range s.Verdicts {
		// The spec's own word on what its matrix cannot decide: the verdict
		// says so, as validate did, whatever its runs happened to show.
		if why := ex.Undecidable[v.Name]; why != "" {
			s.Verdicts[i].Outcome, s.Verdicts[i].Reason = Skipped, why
		}
	}
	for _, r := range s.Runs {
		for _, d := range r.Damaged {
			s.Damaged = append(s.Damaged, r.ID+": "+d)
		}
	}
	s.LeftOut = leftOut(s.Runs, ex)
	s.Notices = s.notices()
	s.Audits = BuildAudit(exp, &s)
	return s
}

// ConditionRank orders conditions: the roles first, then by name.
func ConditionRank(ex rundata.Expectations, c string) int {
	for i, n := range []string{ex.Healthy, ex.Slow, ex.Failing, ex.Busy} {
		if c == n {
			return i
		}
	}
	return 4
}

func ModeRank(m string) int {
	switch m {
	case "shared":
		return 0
	case "bulkhead":
		return 1
	}
	return 2
}

func buildCells(runs []measure.RunSummary, ex rundata.Expectations) []Cell {
	idx := map[[2]string]int{}
	var cells []Cell
	for _, r := range runs {
		k := [2]string{r.Condition, r.Mode}
		i, ok := idx[k]
		if !ok {
			i = len(cells)
			idx[k] = i
			cells = append(cells, Cell{Condition: r.Condition, Mode: r.Mode})
		}
		if r.Usable() {
			cells[i].Runs = append(cells[i].Runs, r.ID)
			cells[i].UsedRuns = append(cells[i].UsedRuns, r)
		} else {
			cells[i].Excluded = append(cells[i].Excluded, Exclusion{Run: r.ID, Why: r.Exclusion()})
			cells[i].excluded = append(cells[i].excluded, r)
		}
	}
	sort.SliceStable(cells, func(i, j int) bool {
		a, b := cells[i], cells[j]
		if ra, rb := ConditionRank(ex, a.Condition), ConditionRank(ex, b.Condition); ra != rb {
			return ra < rb
		}
		if a.Condition != b.Condition {
			return a.Condition < b.Condition
		}
		if ra, rb := ModeRank(a.Mode), ModeRank(b.Mode); ra != rb {
			return ra < rb
		}
		return a.Mode < b.Mode
	})
	for i := range cells {
		c := &cells[i]
		c.VictimP99Ms = measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num { return r.Endpoint(ex.Victim).FaultP99Ms }))
		c.VictimErrorRate = measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num { return r.Endpoint(ex.Victim).FaultErrorRate }))
		c.CulpritP99Ms = measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num { return r.Endpoint(ex.Culprit).FaultP99Ms }))
		c.CulpritErrorRate = measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num { return r.Endpoint(ex.Culprit).FaultErrorRate }))
		c.CulpritOKRate = measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num { return r.Endpoint(ex.Culprit).FaultOKRate }))
		c.TimeToDegradeT = measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num { return r.TimeToDegradeT }))
		c.Phases = cellPhases(c)
	}
	return cells
}

// baselineErrorRate is endpoint ep's baseline error rate, mean over the
// cell's usable runs (0 without any).
func (c *Cell) baselineErrorRate(ep string) float64 {
	sum := 0.0
	for _, r := range c.UsedRuns {
		sum += r.Endpoint(ep).BaselineErrorRate()
	}
	if len(c.UsedRuns) == 0 {
		return 0
	}
	return sum / float64(len(c.UsedRuns))
}

// vals extracts one number per usable run of the cell (NaN kept; estimate
// drops it).
func (c *Cell) vals(f func(measure.RunSummary) measure.Num) []float64 {
	out := make([]float64, len(c.UsedRuns))
	for i, r := range c.UsedRuns {
		out[i] = float64(f(r))
	}
	return out
}

func buildLittle(cells []Cell) []LittleRow {
	var rows []LittleRow
	for i := range cells {
		c := &cells[i]
		pools := map[string]int{}
		for _, r := range c.UsedRuns {
			for _, p := range r.Pools {
				pools[p.Pool] = p.Limit
			}
		}
		for _, name := range slices.Sorted(maps.Keys(pools)) {
			get := func(f func(measure.PoolStats) measure.Num) measure.Estimate {
				return measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num {
					for _, p := range r.Pools {
						if p.Pool == name {
							return f(p)
						}
					}
					return measure.Undefined
				}))
			}
			rows = append(rows, LittleRow{
				Condition: c.Condition, Mode: c.Mode, Pool: name, Limit: pools[name],
				PredictedDemand:      get(func(p measure.PoolStats) measure.Num { return p.PredictedDemand }),
				MeasuredDemand:       get(func(p measure.PoolStats) measure.Num { return p.MeasuredDemand }),
				DemandRatio:          get(func(p measure.PoolStats) measure.Num { return p.DemandRatio }),
				PredictedExhaustionS: get(func(p measure.PoolStats) measure.Num { return p.PredictedExhaustionS }),
				MeasuredExhaustionS:  get(func(p measure.PoolStats) measure.Num { return p.MeasuredExhaustionS }),
				ExhaustionRatio:      get(func(p measure.PoolStats) measure.Num { return p.ExhaustionRatio }),
			})
		}
	}
	return rows
}

// FindCell returns the cell of condition × mode, or nil.
func FindCell(cells []Cell, cond, mode string) *Cell {
	for i := range cells {
		if cells[i].Condition == cond && cells[i].Mode == mode {
			return &cells[i]
		}
	}
	return nil
}

// cellPhases aggregates each endpoint's phase numbers over the cell's runs,
// in the order of the first run.
func cellPhases(c *Cell) []CellPhase {
	if len(c.UsedRuns) == 0 {
		return nil
	}
	var out []CellPhase
	for _, e := range c.UsedRuns[0].Endpoints {
		for _, ph := range e.Phases {
			get := func(f func(measure.PhaseNumbers) measure.Num) measure.Estimate {
				return measure.EstimateOf(c.vals(func(r measure.RunSummary) measure.Num {
					for _, p := range r.Endpoint(e.Endpoint).Phases {
						if p.Phase == ph.Phase {
							return f(p)
						}
					}
					return measure.Undefined
				}))
			}
			out = append(out, CellPhase{Endpoint: e.Endpoint, Phase: ph.Phase,
				P50Ms:     get(func(p measure.PhaseNumbers) measure.Num { return p.P50Ms }),
				P99Ms:     get(func(p measure.PhaseNumbers) measure.Num { return p.P99Ms }),
				ErrorRate: get(func(p measure.PhaseNumbers) measure.Num { return p.ErrorRate })})
		}
	}
	return out
}
