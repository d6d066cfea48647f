package verdict

import (
	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// Classes of an audit map's cell.
const (
	// CellIsolated: the endpoint does not call the dependency and stayed
	// at its baseline.
	CellIsolated = "ISOLATED"
	// CellDegraded: the endpoint does not call the dependency, yet it
	// degraded: a finding.
	CellDegraded = "DEGRADED"
	// CellExpected: the endpoint calls the dependency; its numbers are
	// shown, degraded or not.
	CellExpected = "EXPECTED"
	// CellInvalid: no valid run of the cell.
	CellInvalid = "INVALID"
	// CellAborted: a stop condition removed the fault.
	CellAborted = "ABORTED"
	// CellSkipped: the cell was not run (the audit stopped before it).
	CellSkipped = "SKIPPED"
)

// AuditMap is a blast-radius audit's result: endpoints × (dependency,
// fault), each cell classed, with the measured call graph and the
// findings (the cells where an endpoint degraded from a dependency it
// does not call, each with the resource the ranking names).
type AuditMap struct {
	Experiment string        `json:"experiment"`
	Mode       string        `json:"mode"`
	Config     rundata.Audit `json:"audit"`
	// TimeoutMs is T.
	TimeoutMs measure.Num `json:"timeout_ms"`
	// Endpoints are the rows, in the spec's order.
	Endpoints []string `json:"endpoints"`
	// Columns are the faults, in the matrix's order: a dependency each
	// with a fault.
	Columns []AuditColumn `json:"columns"`
	// Cells[i][j] is endpoint i under column j.
	Cells [][]AuditCell `json:"cells"`
	// Control is each endpoint in the control run (no fault), in the order
	// of Endpoints: its own noise, which the thresholds are raised to.
	Control []AuditControl `json:"control"`
	// CallGraph is the measured graph (nil without a calibration); the
	// declared one is Config.Calls. GraphDiffs are their differences,
	// e.g. "checkout calls PAY (measured), not declared".
	CallGraph  *rundata.CallGraph `json:"call_graph,omitempty"`
	GraphDiffs []string           `json:"graph_differences,omitempty"`
	// Declared is the declared call graph: audit.calls, else each
	// endpoint's declared dependency (nil when nothing is declared).
	Declared map[string][]string `json:"declared,omitempty"`
	// Arrivals is the load's arrival process (constant or poisson; ""
	// when the spec did not say).
	Arrivals string `json:"arrivals,omitempty"`
	// Findings are the DEGRADED cells, in map order.
	Findings []AuditFinding `json:"findings"`
	// Mispredicted are the measured cells (ISOLATED or DEGRADED) whose
	// class is not the one the layout predicts, as "endpoint × column:
	// measured, predicted".
	Mispredicted []string `json:"mispredicted,omitempty"`
	// Violations are the cells --check fails on: a critical endpoint not
	// ISOLATED from a dependency it does not call (DEGRADED, INVALID,
	// ABORTED or SKIPPED), as "endpoint × column: class".
	Violations []string `json:"violations,omitempty"`
	// Unmeasured are the violations that are not a measurement of harm
	// (INVALID, SKIPPED, or ABORTED by a stop condition another endpoint
	// or a probe met): --check exits 3 (rerun) on them rather than 1.
	Unmeasured []string `json:"unmeasured,omitempty"`
}

// AuditColumn is one fault of the matrix: a condition of the run.
type AuditColumn = rundata.AuditColumn

// AuditCell is one endpoint under one fault, over the cell's valid runs
// (means over repeats).
type AuditCell struct {
	Class string `json:"class"`
	// Calls is whether the endpoint calls the column's dependency (by the
	// measured call graph, else the declared one).
	Calls bool `json:"calls"`
	// Degraded is whether the numbers crossed the thresholds (for an
	// EXPECTED cell too).
	Degraded bool `json:"degraded"`
	// BaselineP99Ms and FaultP99Ms are the endpoint's p99 in the runs'
	// baseline and fault phases; P99RiseT how far the fault-phase p99 rose
	// above the lower of the run's baseline p99 and the control run's
	// fault-phase p99, in T.
	BaselineP99Ms measure.Num `json:"baseline_p99_ms"`
	FaultP99Ms    measure.Num `json:"fault_p99_ms"`
	P99RiseT      measure.Num `json:"p99_rise_t"`
	// ErrorRate is the fault phase's error rate; ErrorPoints the rise
	// over the baseline's, in percentage points.
	ErrorRate   measure.Num `json:"error_rate"`
	ErrorPoints measure.Num `json:"error_points"`
	// TimeToDegradeS is the time from fault start to the endpoint's first
	// degraded window (NaN if none).
	TimeToDegradeS measure.Num `json:"time_to_degrade_s"`
	// Resource is what the exhaustion ranking names first in the cell's
	// runs (e.g. "pool core", "connections shared", "cpu"), Detail its
	// evidence; for a DEGRADED cell, why it degraded.
	Resource string `json:"resource,omitempty"`
	Detail   string `json:"detail,omitempty"`
	// Failures says what the fault phase's failures were, by class, as
	// the service's answers told (the classification rules), e.g. "30 %
	// rejected by a pool (503 X-Reject: pool), 1 % unanswered within the
	// client's timeout"; empty without failures.
	Failures string `json:"failures,omitempty"`
	// Runs are the cell's valid runs; DegradedRuns those of them whose own
	// numbers crossed the thresholds (the cell is clear when it is 0 or
	// Runs: repeats: auto stops once every measured cell is).
	Runs         int    `json:"runs"`
	DegradedRuns int    `json:"degraded_runs"`
	Aborted      string `json:"aborted,omitempty"`
	// Predicted is the class the layout predicts (Little's law on the
	// run's pools: the endpoint's pool's demand in the fault phase above
	// its size, from the run's metadata): EXPECTED, DEGRADED or ISOLATED;
	// empty for a service whose pools the harness does not know.
	Predicted string `json:"predicted,omitempty"`
}

// AuditControl is one endpoint in the control run.
type AuditControl struct {
	Endpoint  string      `json:"endpoint"`
	P99Ms     measure.Num `json:"p99_ms"`
	P99RiseT  measure.Num `json:"p99_rise_t"`
	ErrorRate measure.Num `json:"error_rate"`
	// NoiseT is how far its p99 rose without a fault, in T (controlNoise):
	// what the p99 threshold is raised by.
	NoiseT measure.Num `json:"noise_t"`
}

// AuditFinding is a DEGRADED cell: an endpoint taken down by a
// dependency it does not call, and the shared resource that did it.
type AuditFinding struct {
	Endpoint   string `json:"endpoint"`
	Dependency string `json:"dependency"`
	// Class is the class of Dependency's calls (statements, routes) the
	// fault acted on, if the column is a class's.
	Class     string `json:"class,omitempty"`
	Fault     string `json:"fault"`
	Condition string `json:"condition"`
	// Summary is one line, e.g. "/cart degraded when PAY was slow, which
	// it does not call: p99 28 → 240 ms (+0.84 T), errors 31 %, after
	// 0.3 s"; Resource is what ran out first ("pool core").
	Summary  string `json:"summary"`
	Resource string `json:"resource,omitempty"`
}
