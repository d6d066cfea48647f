package render

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
)

// aftermathRow is one run's line of the report's "After the fault"
// section.
type aftermathRow struct {
	ID, Recovered, Time, Bound, Leaked, Limits, Evidence string
	Failed                                               bool
}

// aftermathRows are the rows of every run judged for what its fault left
// behind; nil when no run was.
func aftermathRows(s *verdict.Summary) []aftermathRow {
	var rows []aftermathRow
	for _, r := range s.Runs {
		if r.Recovery == nil && r.Leaks == nil && len(r.Limits) == 0 {
			continue
		}
		row := aftermathRow{ID: r.ID, Recovered: "—", Time: "—", Bound: "—", Leaked: "—", Limits: "—"}
		var ev []string
		if rec := r.Recovery; rec != nil {
			row.Bound = measure.FmtG(float64(rec.BoundT))
			switch {
			case !rec.Recovered:
				row.Recovered, row.Failed = "no", true
			case !rec.Judged:
				row.Recovered = "cannot tell"
			default:
				row.Recovered, row.Time = "yes", measure.FmtG(float64(rec.TimeT))
			}
			for _, e := range rec.Endpoints {
				switch {
				case e.Judged && !e.Recovered:
					ev = append(ev, e.String())
				case e.Noisy:
					ev = append(ev, fmt.Sprintf("/%s: not back at the end, but the canary was slow then too (the machine, not the service)", e.Endpoint))
				case !e.Judged:
					ev = append(ev, fmt.Sprintf("/%s: the recovery phase ended less than a hold span (%s s) after it could still recover", e.Endpoint, measure.FmtG(float64(e.HoldS))))
				}
			}
		}
		if l := r.Leaks; l != nil {
			row.Leaked = fmt.Sprint(l.Leaked)
			if !l.Judged && l.Leaked == 0 {
				row.Leaked = "— (no pool metrics or probe)"
			}
			for _, p := range l.Pools {
				if p.Leaked > 0 {
					ev, row.Failed = append(ev, p.String()), true
				}
			}
		}
		var lims []string
		for _, c := range r.Limits {
			lims = append(lims, fmt.Sprintf("%s %d/%d", c.Dependency, c.Peak, c.Limit))
			if !c.Holds {
				ev, row.Failed = append(ev, c.String()), true
			}
		}
		if len(lims) > 0 {
			row.Limits = strings.Join(lims, ", ")
		}
		row.Evidence = strings.Join(ev, "; ")
		rows = append(rows, row)
	}
	return rows
}

// pathRow is one condition × mode of the permits-lost table: an error path
// walked by the fault and what it cost.
type pathRow struct {
	Condition, Mode, Lost, Recovered string
}

// pathRows summarise, per condition × mode, the most permits a run of the
// cell lost and how many of its runs recovered; nil when no run's leaks
// were judged.
func pathRows(s *verdict.Summary) []pathRow {
	var rows []pathRow
	judged := false
	for _, c := range s.Cells {
		lost, n, rec, recN := 0, 0, 0, 0
		for _, r := range c.UsedRuns {
			if l := r.Leaks; l != nil {
				judged = judged || l.Judged
				lost, n = max(lost, l.Leaked), n+1
			}
			if rr := r.Recovery; rr != nil && rr.Judged {
				recN++
				if rr.Recovered {
					rec++
				}
			}
		}
		row := pathRow{Condition: c.Condition, Mode: c.Mode, Lost: "—", Recovered: "—"}
		if n > 0 {
			row.Lost = fmt.Sprint(lost)
		}
		if recN > 0 {
			row.Recovered = fmt.Sprintf("%d of %d", rec, recN)
		}
		rows = append(rows, row)
	}
	if !judged {
		return nil
	}
	return rows
}

// writeAftermathMD writes the report's "After the fault" section: each
// run's recovery, permits lost and limits, the permits lost per error path,
// and the rules. Nothing when no run was judged.
func writeAftermathMD(b *bytes.Buffer, s *verdict.Summary) {
	rows := aftermathRows(s)
	if len(rows) == 0 {
		return
	}
	p := func(format string, a ...any) { fmt.Fprintf(b, format+"\n", a...) }
	p("## After the fault: recovery, leaked permits, limits\n")
	if paths := pathRows(s); len(paths) > 0 {
		p("Permits lost per error path (the most any run of the cell lost) and the runs that recovered:\n")
		p("| condition | mode | permits lost | recovered |")
		p("|---|---|---|---|")
		for _, r := range paths {
			p("| %s | %s | %s | %s |", r.Condition, r.Mode, r.Lost, r.Recovered)
		}
		p("")
	}
	p("| run | recovered | time to recover (T) | bound (T) | permits lost | peak calls in flight / limit | evidence |")
	p("|---|---|---|---|---|---|---|")
	for _, r := range rows {
		p("| %s | %s | %s | %s | %s | %s | %s |", r.ID, r.Recovered, r.Time, r.Bound, r.Leaked, r.Limits, mdEscape(orDash(r.Evidence)))
	}
	p("\nRules:\n")
	p("- Recovery: %s.", measure.RecoveryRule)
	p("- Leaked permits: %s.", measure.LeakRule)
	p("- Limits: %s.\n", measure.LimitRule)
}
