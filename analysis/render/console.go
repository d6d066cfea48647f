package render

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
)

// PrintVerdicts writes a compact table of the verdicts to w: one line per
// prediction with its outcome, its first deciding number and the reason.
// A SKIPPED prediction that is not checked (the matrix was not built to
// judge it) is named on one line after the table instead.
func PrintVerdicts(w io.Writer, s *verdict.Summary) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PREDICTION\tOUTCOME\tKEY NUMBER\tREASON")
	var unjudged []string
	for _, v := range s.Verdicts {
		if v.Outcome == verdict.Skipped && !slices.ContainsFunc(s.Expectations.Check, func(c string) bool { return strings.EqualFold(c, v.Name) }) {
			unjudged = append(unjudged, v.Name)
			continue
		}
		key := "—"
		for _, m := range v.Measures {
			if m.Op != "" {
				key = fmt.Sprintf("%s = %s %s (%s %s)", m.Name, measure.FormatEstimate(m.Value), m.Unit, m.Op, measure.Fmt3(float64(*m.Threshold)))
				break
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.Name, v.Outcome, key, v.Reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(unjudged) > 0 {
		_, err := fmt.Fprintf(w, "not judged by this matrix (no runs of the cells they compare; see report.md): %s\n", strings.Join(unjudged, ", "))
		return err
	}
	return nil
}
