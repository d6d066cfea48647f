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
// sentence each: runs whose data are damaged, how many runs were left out
// or run again and for which rules (LeftOut), what to change, and
// responses no classification rule matched.
// The console, report.md, index.html and summary.json all show them.
func (s *Summary) notices() []string {
	var out []string
	for _, d := range s.Damaged {
		out = append(out, "DAMAGED run data, not used: "+d)
	}
	if lo := s.LeftOut; lo != nil {
		for _, n := range []string{lo.Sentence(), lo.RetriedSentence(), lo.Advice} {
			if n != "" {
				out = append(out, n)
			}
		}
	}
	out = append(out, s.unclassifiedNotices()...)
	out = append(out, s.timingNotices()...)
	return out
}

// timingNotices are the histograms of external.timing.histograms that
// could not be read (measure.WhereTime.Notes), each once with the number
// of runs it was said of.
func (s *Summary) timingNotices() []string {
	var order []string
	runs := map[string]int{}
	for _, r := range s.Runs {
		if r.WhereTime == nil {
			continue
		}
		for _, n := range r.WhereTime.Notes {
			if runs[n] == 0 {
				order = append(order, n)
			}
			runs[n]++
		}
	}
	var out []string
	for _, n := range order {
		out = append(out, fmt.Sprintf("Where the time went, not read in %d of %d runs: %s", runs[n], len(s.Runs), n))
	}
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
