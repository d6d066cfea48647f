package analysis

import (
	"io"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/render"
	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/internal/claims"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// The results folder (rundir).
type (
	// Experiment is a results folder as read by Load.
	Experiment = rundir.Experiment
	// Run is one run's data.
	Run = rundir.Run
	// Expectations are the thresholds and condition roles the verdicts use;
	// the type is the run-data contract's (it lives in the spec).
	Expectations = rundata.Expectations
)

// ErrNotResults is returned (wrapped, naming the file) by Load and
// WriteReport when a folder is not a readable results folder.
var ErrNotResults = rundir.ErrNotResults

// Load reads a results folder (see rundir.Load).
func Load(dir string) (*Experiment, error) { return rundir.Load(dir) }

// One run's numbers (measure).
type (
	// Estimate is a mean over repeats with its bootstrap interval.
	Estimate = measure.Estimate
	// RunSummary holds the per-run numbers the verdicts are built from.
	RunSummary = measure.RunSummary
)

// MinRepeatsForCI is the fewest repeats an interval needs.
const MinRepeatsForCI = measure.MinRepeatsForCI

// Exhausted resources the cmd names.
const (
	ResourceCPU          = measure.ResourceCPU
	ResourceGC           = measure.ResourceGC
	ResourcePoolInferred = measure.ResourcePoolInferred
	ResourceConnections  = measure.ResourceConnections
)

// FormatEstimate renders e as "mean [lo, hi]", 3 significant digits.
func FormatEstimate(e Estimate) string { return measure.FormatEstimate(e) }

// The verdicts (verdict).
type (
	// Summary is summary.json: everything the report says, as data.
	Summary = verdict.Summary
	// Verdict judges one prediction.
	Verdict = verdict.Verdict
	// Outcome is a verdict's result.
	Outcome = verdict.Outcome
	// CheckResult sorts the checked verdicts by what a CI job may conclude.
	CheckResult = verdict.CheckResult
)

// Verdict outcomes.
const (
	Supported    = verdict.Supported
	NotSupported = verdict.NotSupported
	Inconclusive = verdict.Inconclusive
	Invalid      = verdict.Invalid
	Skipped      = verdict.Skipped
)

// FailFast is the name of the fail-fast verdict.
const FailFast = claims.FailFast

// Evaluate computes per-run numbers, per-cell estimates, Little's-law rows
// and the verdicts under ex (see verdict.Evaluate).
func Evaluate(exp *Experiment, ex Expectations) Summary { return verdict.Evaluate(exp, ex) }

// The outputs (render).

// Options control WriteReport.
type Options = render.Options

// WriteReport evaluates the results folder dir and writes summary.json,
// report.md, index.html and the figures (see render.WriteReport).
func WriteReport(dir string, opts Options) (*Summary, error) { return render.WriteReport(dir, opts) }

// PrintVerdicts writes a compact table of the verdicts to w.
func PrintVerdicts(w io.Writer, s *Summary) error { return render.PrintVerdicts(w, s) }

// DefaultConsoleWidth is the width console output is wrapped to when the
// terminal's is not known.
const DefaultConsoleWidth = render.DefaultConsoleWidth

// ConsoleOptions tune PrintConsole (width, verbose).
type ConsoleOptions = render.ConsoleOptions

// PrintConsole writes the verdict table, the notices, the runs left out
// and a closing warning, wrapped to opts.Width.
func PrintConsole(w io.Writer, s *Summary, opts ConsoleOptions) error {
	return render.PrintConsole(w, s, opts)
}

// WriteJUnit writes one JUnit test case per named verdict (all when names is
// empty).
func WriteJUnit(w io.Writer, s *Summary, names []string) error { return render.WriteJUnit(w, s, names) }

// The blast-radius audit (verdict, render).
type (
	// AuditMap is a blast-radius audit's result: endpoints × (dependency,
	// fault), each cell classed, with the measured call graph, the
	// findings and the critical violations.
	AuditMap = verdict.AuditMap
	// AuditColumn is one fault of the audit's matrix.
	AuditColumn = verdict.AuditColumn
	// AuditCell is one endpoint under one fault.
	AuditCell = verdict.AuditCell
	// AuditControl is one endpoint in the audit's control run.
	AuditControl = verdict.AuditControl
	// AuditFinding is an endpoint degraded by a dependency it does not call.
	AuditFinding = verdict.AuditFinding
)

// Classes of an audit map's cell.
const (
	CellIsolated = verdict.CellIsolated
	CellDegraded = verdict.CellDegraded
	CellExpected = verdict.CellExpected
	CellInvalid  = verdict.CellInvalid
	CellAborted  = verdict.CellAborted
	CellSkipped  = verdict.CellSkipped
)

// Names of the audit's outputs.
const (
	AuditJSONFile     = render.AuditJSONFile
	AuditMarkdownFile = render.AuditMarkdownFile
	AuditHTMLFile     = render.AuditHTMLFile
	AuditMapFile      = render.AuditMapFile
)

// WriteAudit writes an audit's map into dir: audit.json, audit.md,
// audit.html and the heatmap audit-map.png (see render.WriteAudit).
func WriteAudit(dir string, m *AuditMap) error { return render.WriteAudit(dir, m) }

// AuditDir is where WriteReport writes the i-th map of an audit (the
// report folder, or audit-<mode>/ in it for an audit of several modes).
func AuditDir(out string, sum *Summary, i int) string { return render.AuditDir(out, sum, i) }

// PrintAudit writes an audit's map to w as a compact table, then its
// findings and critical violations.
func PrintAudit(w io.Writer, m *AuditMap) error { return render.PrintAudit(w, m) }

// WriteFileAtomic writes data to path through a temporary file and a rename.
func WriteFileAtomic(path string, data []byte) error { return render.WriteFileAtomic(path, data) }
