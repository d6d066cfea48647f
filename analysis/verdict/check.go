package verdict

import (
	"strings"
)

// CheckResult sorts the checked verdicts by what their outcomes let a CI
// job conclude.
type CheckResult struct {
	// NotSupported lists the checked predictions that definitely failed on
	// valid runs: the claim does not hold (a regression).
	NotSupported []string
	// Undecided lists those that are INVALID or INCONCLUSIVE: nothing can
	// be concluded, so they must never count as a regression.
	Undecided []string
	// Skipped lists those the matrix could not judge (no complete run, or
	// no such prediction).
	Skipped []string
	// Damaged is set when a run's data are damaged: the results folder
	// itself cannot be trusted.
	Damaged bool
}

// OK reports whether every checked prediction is SUPPORTED on sound data.
func (c CheckResult) OK() bool {
	return len(c.NotSupported)+len(c.Undecided)+len(c.Skipped) == 0 && !c.Damaged
}

// Check judges the named verdicts (e.g. Expectations.Check), matching names
// case-insensitively.
func (s *Summary) Check(names []string) CheckResult {
	c := CheckResult{Damaged: len(s.Damaged) > 0}
	for _, n := range names {
		v, ok := s.Lookup(n)
		switch {
		case !ok:
			c.Skipped = append(c.Skipped, n+" (no such prediction)")
		case v.Outcome == Invalid || v.Outcome == Inconclusive:
			c.Undecided = append(c.Undecided, v.Name+" "+string(v.Outcome))
		case v.Outcome == Skipped:
			c.Skipped = append(c.Skipped, v.Name)
		case v.Outcome != Supported:
			c.NotSupported = append(c.NotSupported, v.Name)
		}
	}
	return c
}

func (s *Summary) Lookup(name string) (Verdict, bool) {
	for _, v := range s.Verdicts {
		if strings.EqualFold(v.Name, name) {
			return v, true
		}
	}
	return Verdict{}, false
}
