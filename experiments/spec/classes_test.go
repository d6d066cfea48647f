package spec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// classesSpec is an external audit of one PostgreSQL dependency with two
// statement classes (%s: more of the spec).
const classesSpec = `name: classes
external:
  upstreams: {DB: "postgres://127.0.0.1:5432", API: "http://127.0.0.1:9002"}
  proxies:   {DB: "127.0.0.1:7001", API: "127.0.0.1:7002"}
  targets:   {report: "http://127.0.0.1:8080/report", interactive: "http://127.0.0.1:8080/interactive"}
dependencies:
  DB: {classes: {report: "(?i)\\breport_", interactive: "interactive_"}}
endpoints:
  - {name: report}
  - {name: interactive}
load: {rates: {report: 10, interactive: 10}}
audit: {faults: [slow, failing]}
%s`

// TestAuditClassColumns: a dependency with statement classes is a column
// per class and fault, each fault matching its class's statements; its
// proxy counts the classes and the runs' metadata names them.
func TestAuditClassColumns(t *testing.T) {
	s, err := Parse("classes.yaml", []byte(fmt.Sprintf(classesSpec, "")))
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range s.Audit.Columns {
		cols = append(cols, c.Condition+"="+c.Target()+" "+c.Fault)
	}
	want := "slow-api=API slow failing-api=API failing slow-db-interactive=DB/interactive slow failing-db-interactive=DB/interactive failing slow-db-report=DB/report slow failing-db-report=DB/report failing"
	if got := strings.Join(cols, " "); got != want {
		t.Errorf("columns %s,\nwant %s", got, want)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Runs {
		if r.Condition != "slow-db-report" {
			continue
		}
		if got := r.Faults[0].Postgres; len(got) != 1 || got[0].Match != `(?i)\breport_` {
			t.Errorf("faults %+v, want the report class's statements only", got)
		}
		if got := r.Meta.StatementClasses["DB"]; fmt.Sprint(got) != `[{interactive interactive_} {report (?i)\breport_}]` {
			t.Errorf("the run's statement classes %v", got)
		}
		for _, c := range r.Components {
			if c.Kind == plan.KindProxy && c.Proxy.Name == "DB" {
				if args := strings.Join(c.Args(), " "); !strings.Contains(args, `--class interactive=interactive_ --class report=(?i)\breport_`) {
					t.Errorf("DB's proxy %q, want its classes", args)
				}
			}
		}
	}
}

// TestStatementClassesOfConditions: a condition's match that no class has
// is counted as a class of its own, match-1, so that Little's law can
// charge it to the share of statements it matches.
func TestStatementClassesOfConditions(t *testing.T) {
	text := strings.Replace(fmt.Sprintf(classesSpec, `conditions:
  - healthy
  - {name: slow, dependency: DB, faults: [{type: latency, latency: 100ms, match: "lookup"}]}
  - {name: slow2, dependency: DB, faults: [{type: latency, latency: 100ms, match: "interactive_"}]}
`), "audit: {faults: [slow, failing]}", "audit: {}", 1)
	s, err := Parse("classes.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	got := s.statementClasses("DB")
	want := []rundata.StatementClass{{Name: "interactive", Match: "interactive_"}, {Name: "report", Match: `(?i)\breport_`}, {Name: "match-1", Match: "lookup"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("classes %v, want %v", got, want)
	}
	if s.statementClasses("API") != nil {
		t.Errorf("an HTTP dependency has statement classes")
	}
}

// TestClassesErrors: classes where they mean nothing, a bad name or
// expression, are refused with the file, line and field.
func TestClassesErrors(t *testing.T) {
	for _, tt := range []struct{ to, want string }{
		{`DB: {classes: {report: "(x"}}`, "classes.yaml:7: dependencies.DB.classes.report: error parsing regexp"},
		{`DB: {classes: {Report: "x"}}`, "dependencies.DB.classes.Report: a class's name is lower-case"},
		{`DB: {classes: {match-1: "x"}}`, `dependencies.DB.classes.match-1: names beginning with "match-"`},
		{`DB: {classes: {report: " "}}`, "dependencies.DB.classes.report: want a regular expression"},
		{`API: {classes: {report: "x"}}`, "dependencies.API.classes: only a PostgreSQL dependency"},
	} {
		text := strings.Replace(fmt.Sprintf(classesSpec, ""), `DB: {classes: {report: "(?i)\\breport_", interactive: "interactive_"}}`, tt.to, 1)
		_, err := Parse("classes.yaml", []byte(text))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.to, err, tt.want)
		} else if strings.Count(err.Error(), "\n") > 0 {
			t.Errorf("%s: more than one error: %v", tt.to, err)
		}
	}
}
