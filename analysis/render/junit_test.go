package render

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
)

func TestCheckAndJUnit(t *testing.T) {
	s := &verdict.Summary{Experiment: "x", Verdicts: []verdict.Verdict{
		{Name: "P1", Outcome: verdict.Supported}, {Name: "P2", Outcome: verdict.NotSupported, Reason: "r"},
		{Name: "P3", Outcome: verdict.Invalid}, {Name: "P4", Outcome: verdict.Skipped}, {Name: "EXHAUSTED", Outcome: verdict.Inconclusive},
	}}
	for _, tc := range []struct {
		names                         []string
		notSupported, undecided, skip string
		damaged, ok                   bool
	}{
		{names: []string{"P1"}, ok: true},
		{names: []string{"p1", "P2"}, notSupported: "P2"},
		{names: []string{"P3", "P4", "EXHAUSTED", "P9"}, undecided: "P3 INVALID,EXHAUSTED INCONCLUSIVE", skip: "P4,P9 (no such prediction)"},
	} {
		c := s.Check(tc.names)
		if strings.Join(c.NotSupported, ",") != tc.notSupported || strings.Join(c.Undecided, ",") != tc.undecided ||
			strings.Join(c.Skipped, ",") != tc.skip || c.OK() != tc.ok {
			t.Errorf("Check(%v) = %+v", tc.names, c)
		}
	}
	s.Damaged = []string{"slow-shared-r1: windows.jsonl:3: bad"}
	if c := s.Check([]string{"P1"}); !c.Damaged || c.OK() {
		t.Errorf("Check with damaged data = %+v", c)
	}
	s.Damaged = nil
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, s, nil); err != nil {
		t.Fatal(err)
	}
	var suite junitSuite
	if err := xml.Unmarshal(buf.Bytes(), &suite); err != nil {
		t.Fatalf("junit does not parse: %v\n%s", err, buf.String())
	}
	if suite.Tests != 5 || suite.Failures != 1 || suite.Errors != 2 || suite.Skipped != 1 {
		t.Errorf("suite counts = %d/%d/%d/%d\n%s", suite.Tests, suite.Failures, suite.Errors, suite.Skipped, buf.String())
	}
	buf.Reset()
	if err := PrintVerdicts(&buf, s); err != nil || !strings.Contains(buf.String(), "NOT SUPPORTED") {
		t.Errorf("PrintVerdicts = %v\n%s", err, buf.String())
	}
}
