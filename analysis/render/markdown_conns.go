package render

import (
	"bytes"
	"fmt"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
)

// writeConnWaitsMD writes every run's connection waits (nothing when no run
// has connection pools).
func writeConnWaitsMD(b *bytes.Buffer, s *verdict.Summary) {
	head := false
	for _, r := range s.Runs {
		for _, w := range r.ConnWaits {
			if !head {
				fmt.Fprintf(b, "## Connection waits\n\n")
				fmt.Fprintf(b, "Fault phase (the run after warmup without one). Calls = dependency calls that got a connection; mean wait = their mean wait for it (0 when one was free); mean hold = their mean time holding it (a query's time, an HTTP call's round trip), in the baseline → the fault phase: a slow dependency raises the hold, a pool run dry the wait with the hold flat; timed out = calls whose deadline passed while they waited (they never reached the dependency).\n\n")
				fmt.Fprintf(b, "| run | endpoint | calls | mean wait ms | mean hold ms (baseline → fault) | timed out waiting |\n|---|---|---|---|---|---|\n")
				head = true
			}
			fmt.Fprintf(b, "| %s | /%s | %s | %s | %s → %s | %s |\n", r.ID, w.Endpoint, measure.FmtNum(w.Calls), measure.FmtNum(w.MeanWaitMs),
				measure.FmtNum(w.BaselineHoldMs), measure.FmtNum(w.MeanHoldMs), measure.FmtNum(w.Timeouts))
		}
	}
	if head {
		fmt.Fprintln(b)
	}
}
