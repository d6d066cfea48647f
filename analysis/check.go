package analysis

import (
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// PrintVerdicts writes a compact table of the verdicts to w: one line per
// prediction with its outcome, its first deciding number and the reason.
// A SKIPPED prediction that is not checked (the matrix was not built to
// judge it) is named on one line after the table instead.
func PrintVerdicts(w io.Writer, s *Summary) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PREDICTION\tOUTCOME\tKEY NUMBER\tREASON")
	var unjudged []string
	for _, v := range s.Verdicts {
		if v.Outcome == Skipped && !slices.ContainsFunc(s.Expectations.Check, func(c string) bool { return strings.EqualFold(c, v.Name) }) {
			unjudged = append(unjudged, v.Name)
			continue
		}
		key := "—"
		for _, m := range v.Measures {
			if m.Op != "" {
				key = fmt.Sprintf("%s = %s %s (%s %s)", m.Name, FormatEstimate(m.Value), m.Unit, m.Op, fmt3(float64(*m.Threshold)))
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
		v, ok := s.verdict(n)
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

func (s *Summary) verdict(name string) (Verdict, bool) {
	for _, v := range s.Verdicts {
		if strings.EqualFold(v.Name, name) {
			return v, true
		}
	}
	return Verdict{}, false
}

type junitSuite struct {
	XMLName  xml.Name    `xml:"testsuite"`
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string    `xml:"name,attr"`
	Classname string    `xml:"classname,attr"`
	Failure   *junitMsg `xml:"failure,omitempty"`
	Error     *junitMsg `xml:"error,omitempty"`
	Skipped   *junitMsg `xml:"skipped,omitempty"`
	SystemOut string    `xml:"system-out,omitempty"`
}

type junitMsg struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes one JUnit test case per named verdict (all verdicts when
// names is empty): SUPPORTED passes, INVALID and INCONCLUSIVE are errors
// (nothing could be concluded), SKIPPED is skipped, NOT SUPPORTED is a
// failure. The measures, the runs left out and why go into the text.
func WriteJUnit(w io.Writer, s *Summary, names []string) error {
	if len(names) == 0 {
		for _, v := range s.Verdicts {
			names = append(names, v.Name)
		}
	}
	suite := junitSuite{Name: "bulkheadlab/" + s.Experiment}
	for _, n := range names {
		v, ok := s.verdict(n)
		c := junitCase{Name: n, Classname: "bulkheadlab." + s.Experiment}
		if !ok {
			c.Failure = &junitMsg{Message: "no such prediction", Type: "UNKNOWN"}
		} else {
			c.Name = v.Name + ": " + v.Claim
			body := verdictText(v)
			switch v.Outcome {
			case Supported:
				c.SystemOut = body
			case Invalid, Inconclusive:
				c.Error = &junitMsg{Message: v.Reason, Type: string(v.Outcome), Text: body}
			case Skipped:
				c.Skipped = &junitMsg{Message: v.Reason}
			default:
				c.Failure = &junitMsg{Message: v.Reason, Type: string(v.Outcome), Text: body}
			}
		}
		suite.Tests++
		switch {
		case c.Failure != nil:
			suite.Failures++
		case c.Error != nil:
			suite.Errors++
		case c.Skipped != nil:
			suite.Skipped++
		}
		suite.Cases = append(suite.Cases, c)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(suite); err != nil {
		return fmt.Errorf("analysis: junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func verdictText(v Verdict) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", v.Outcome, v.Reason)
	for _, m := range v.Measures {
		fmt.Fprintf(&b, "%s = %s %s", m.Name, FormatEstimate(m.Value), m.Unit)
		if m.Op != "" {
			fmt.Fprintf(&b, " (needs %s %s: %s)", m.Op, fmt3(float64(*m.Threshold)), m.Result)
		}
		b.WriteString("\n")
	}
	for _, e := range v.Excluded {
		fmt.Fprintf(&b, "left out: %s: %s\n", e.Run, e.Why)
	}
	return b.String()
}
