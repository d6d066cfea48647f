package render

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/render/words"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
)

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
func WriteJUnit(w io.Writer, s *verdict.Summary, names []string) error {
	if len(names) == 0 {
		for _, v := range s.Verdicts {
			names = append(names, v.Name)
		}
	}
	suite := junitSuite{Name: "bulkheadlab/" + s.Experiment}
	for _, n := range names {
		v, ok := s.Lookup(n)
		c := junitCase{Name: n, Classname: "bulkheadlab." + s.Experiment}
		if !ok {
			c.Failure = &junitMsg{Message: "no such prediction", Type: "UNKNOWN"}
		} else {
			c.Name = v.Name + ": " + v.Claim
			body := verdictText(v)
			switch v.Outcome {
			case verdict.Supported:
				c.SystemOut = body
			case verdict.Invalid, verdict.Inconclusive:
				c.Error = &junitMsg{Message: v.Reason, Type: string(v.Outcome), Text: body}
			case verdict.Skipped:
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

func verdictText(v verdict.Verdict) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", v.Outcome, v.Reason)
	for _, m := range v.Measures {
		fmt.Fprintf(&b, "%s = %s %s", m.Name, measure.FormatEstimate(m.Value), m.Unit)
		if m.Op != "" {
			fmt.Fprintf(&b, " (needs %s %s: %s)", m.Op, words.Fmt3(float64(*m.Threshold)), m.Result)
		}
		b.WriteString("\n")
	}
	for _, e := range v.Excluded {
		fmt.Fprintf(&b, "left out: %s: %s\n", e.Run, e.Why)
	}
	return b.String()
}
