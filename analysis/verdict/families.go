package verdict

import "github.com/bulkheadlab/bulkheadlab/internal/rundata"

// A family is one claim family's verdicts over the summary's cells (and,
// for sizing, its runs); it may add what its verdicts rest on to the
// summary (the sizing curve).
type family func(s *Summary) []Verdict

// families are the claim families in the order their verdicts appear in
// summary.json, the report and the console: each is one file of this
// package, its run numbers one file of package measure. A new claim family
// is a file here, a file there, and a line in this list and in measure's
// runFamilies.
var families = []family{
	onCells(predictions),       // predictions.go: P1–P4, FAILFAST, EXHAUSTED
	onCells(aftermathVerdicts), // aftermath.go: RECOVERY, NO-LEAK, LIMIT-HOLDS
	onCells(policyVerdicts),    // policy.go: breakers, adaptive limits, retries
	sizing,                     // sizing.go: the sizing curve and its verdicts
	onCells(connsVerdicts),     // conns.go: connection pools
	onCells(cpuVerdicts),       // cpu.go: CPU not isolated
	onCells(fleetVerdicts),     // fleet.go: the fleet's multiplication
}

// onCells is a family whose verdicts need only the cells and the
// expectations.
func onCells(f func(cells []Cell, ex rundata.Expectations) []Verdict) family {
	return func(s *Summary) []Verdict { return f(s.Cells, s.Expectations) }
}
