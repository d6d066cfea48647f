package verdict

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// notices are what a reader must know before trusting the verdicts, one
// sentence each: runs whose data are damaged, runs left INVALID (and why),
// runs that were run again, and responses no classification rule matched.
// The console, report.md, index.html and summary.json all show them.
func (s *Summary) notices() []string {
	var out []string
	for _, d := range s.Damaged {
		out = append(out, "DAMAGED run data, not used: "+d)
	}
	var invalid, retried []string
	for _, r := range s.Runs {
		if r.Status == rundata.StatusComplete && !r.Valid && len(r.Damaged) == 0 {
			invalid = append(invalid, fmt.Sprintf("%s (%s)", r.ID, strings.Join(FirstN(r.Invalid, 3), "; ")))
		}
		if n := len(r.Retried); n > 0 {
			retried = append(retried, fmt.Sprintf("%s ×%d (%s)", r.ID, n, strings.Join(FirstN(r.Retried[0].Reasons, 2), "; ")))
		}
	}
	if len(invalid) > 0 {
		out = append(out, fmt.Sprintf("%d of %d runs are INVALID and no verdict uses them: %s", len(invalid), len(s.Runs), strings.Join(invalid, "; ")))
	}
	if len(retried) > 0 {
		out = append(out, "Run again after an INVALID attempt (the earlier attempts are kept under runs/<id>.invalid-N): "+strings.Join(retried, "; "))
	}
	out = append(out, s.unclassifiedNotices()...)
	return out
}

// unclassifiedNotices names, per endpoint, the share and status codes of
// results no classification rule matched, over every run and judged phase:
// "31 % of /a matched no rule: 429 ×2000 — add a rule".
func (s *Summary) unclassifiedNotices() []string {
	type acc struct {
		n, total int64
		codes    map[string]int64
	}
	by := map[string]*acc{}
	for _, r := range s.Runs {
		for _, e := range r.Endpoints {
			a := by[e.Endpoint]
			if a == nil {
				a = &acc{codes: map[string]int64{}}
				by[e.Endpoint] = a
			}
			for _, p := range e.Phases {
				if p.Phase == rundata.PhaseWarmup {
					continue
				}
				a.total += p.Results
				for code, n := range p.Unclassified {
					a.n += n
					a.codes[code] += n
				}
			}
		}
	}
	var out []string
	for _, ep := range slices.Sorted(maps.Keys(by)) {
		a := by[ep]
		if a.n == 0 {
			continue
		}
		codes := slices.Sorted(maps.Keys(a.codes))
		sort.SliceStable(codes, func(i, j int) bool { return a.codes[codes[i]] > a.codes[codes[j]] })
		var parts []string
		for _, c := range codes {
			parts = append(parts, fmt.Sprintf("%s ×%d", c, a.codes[c]))
		}
		out = append(out, fmt.Sprintf("%.3g %% of /%s's results matched no classification rule: %s — add a rule (external.rules) for them; a verdict that depends on the classes is INCONCLUSIVE above %g %%",
			100*float64(a.n)/float64(max(a.total, 1)), ep, strings.Join(parts, ", "), 100*MaxUnclassified))
	}
	return out
}

func FirstN(v []string, n int) []string {
	if len(v) <= n {
		return v
	}
	return append(append([]string(nil), v[:n]...), fmt.Sprintf("%d more", len(v)-n))
}
