package spec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/faultproxy"
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
		if got := r.Meta.CallClasses["DB"]; fmt.Sprint(got) != `[{interactive interactive_} {report (?i)\breport_}]` {
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
	got := classesPart{s}.callClasses("DB")
	want := []rundata.CallClass{{Name: "interactive", Match: "interactive_"}, {Name: "report", Match: `(?i)\breport_`}, {Name: "match-1", Match: "lookup"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("classes %v, want %v", got, want)
	}
	if (classesPart{s}).callClasses("API") != nil {
		t.Errorf("an HTTP dependency without classes or a match has classes: %v", classesPart{s}.callClasses("API"))
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
		{`API: {classes: {report: "(x"}}`, "classes.yaml:7: dependencies.API.classes.report: error parsing regexp"},
		{`API: {classes: {report: "get /reports"}}`, `dependencies.API.classes.report: "get" before the space: want a method in capitals`},
		{`API: {classes: {report: "(?i)\\bfrom report_"}}`, `dependencies.API.classes.report: "(?i)\\bfrom" before the space: want a method in capitals`},
		{`API: {classes: {report: ""}}`, "dependencies.API.classes.report: want a route"},
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

// routesSpec is an external audit of one HTTP dependency with two route
// classes, and a Redis over TCP (%s: more of the spec).
const routesSpec = `name: routes
external:
  upstreams: {API: "http://127.0.0.1:9001", CACHE: "tcp://127.0.0.1:6379"}
  proxies:   {API: "127.0.0.1:7001", CACHE: "127.0.0.1:7002"}
  targets:   {report: "http://127.0.0.1:8080/report", interactive: "http://127.0.0.1:8080/interactive"}
dependencies:
  API: {classes: {report: "^/reports/", items: "GET ^/items/"}}
endpoints:
  - {name: report, dependency: API}
  - {name: interactive, dependency: API}
load: {rates: {report: 10, interactive: 10}}
audit: {faults: [slow]}
%s`

// TestAuditRouteColumns: an HTTP dependency with route classes is a
// column per class, each fault carrying its class's route as its match
// (the HTTP plane's fault, no other plane's); its proxy counts the
// classes (--class) and the runs' metadata names them.
func TestAuditRouteColumns(t *testing.T) {
	s, err := Parse("routes.yaml", []byte(fmt.Sprintf(routesSpec, "")))
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range s.Audit.Columns {
		cols = append(cols, c.Condition+"="+c.Target()+" "+c.Fault)
	}
	if got, want := strings.Join(cols, " "), "slow-api-items=API/items slow slow-api-report=API/report slow slow-cache=CACHE slow"; got != want {
		t.Errorf("columns %s,\nwant %s", got, want)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	seen := false
	for _, r := range p.Runs {
		if r.Condition != "slow-api-report" {
			continue
		}
		seen = true
		fs := r.Faults[0]
		if len(fs.Faults) != 1 || fs.Faults[0].Match != "^/reports/" || fs.Postgres != nil || fs.TCP != nil {
			t.Errorf("faults %+v, want the report route's requests only, on the HTTP plane", fs)
		}
		if got := r.Meta.CallClasses; fmt.Sprint(got) != `map[API:[{items GET ^/items/} {report ^/reports/}]]` {
			t.Errorf("the run's classes %v", got)
		}
		for _, c := range r.Components {
			if c.Kind != plan.KindProxy {
				continue
			}
			args := strings.Join(c.Args(), " ")
			switch c.Proxy.Name {
			case "API":
				if !strings.Contains(args, "--class items=GET ^/items/ --class report=^/reports/") {
					t.Errorf("API's proxy %q, want its classes", args)
				}
			case "CACHE":
				if strings.Contains(args, "--class") {
					t.Errorf("CACHE's proxy %q: a TCP proxy has no classes", args)
				}
			}
		}
	}
	for _, c := range s.Conditions {
		if c.Name == "slow-api-report" && !strings.Contains(c.Description, "(its report requests)") {
			t.Errorf("description %q", c.Description)
		}
	}
	if !seen {
		t.Fatal("no run of slow-api-report")
	}
}

// TestRouteMatchOfConditions: a condition's match on an HTTP dependency
// is a route; one that no class has is counted as a class of its own
// (match-1), and the fault carries it.
func TestRouteMatchOfConditions(t *testing.T) {
	text := strings.Replace(fmt.Sprintf(routesSpec, `conditions:
  - healthy
  - {name: slow-export, dependency: API, faults: [{type: latency, latency: 100ms, match: "GET|HEAD /export$"}]}
  - {name: slow-items, dependency: API, faults: [{type: latency, latency: 100ms, match: "GET ^/items/"}]}
`), "audit: {faults: [slow]}", "audit: {}", 1)
	s, err := Parse("routes.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := []rundata.CallClass{{Name: "items", Match: "GET ^/items/"}, {Name: "report", Match: "^/reports/"}, {Name: "match-1", Match: "GET|HEAD /export$"}}
	if got := (classesPart{s}).callClasses("API"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("classes %v, want %v", got, want)
	}
	if (classesPart{s}).callClasses("CACHE") != nil {
		t.Errorf("a TCP dependency has classes")
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Runs {
		if r.Condition == "slow-export" {
			if f := r.Faults[0].Faults[0]; f.Match != "GET|HEAD /export$" {
				t.Errorf("fault %+v, want the route as its match", f)
			}
			if d := s.Conditions[1].DescribeFaults(); !strings.HasSuffix(d, `on 100 % of the calls that match "GET|HEAD /export$"`) {
				t.Errorf("described %q", d)
			}
		}
	}
}

// TestRouteErrors: a route class or match that is no route, a class or
// match on a TCP dependency, too many classes: refused with the file,
// line and field.
func TestRouteErrors(t *testing.T) {
	many := make([]string, faultproxy.MaxClasses/2+1)
	for i := range many {
		many[i] = fmt.Sprintf("c%d: \"^/c%d\"", i, i)
	}
	for _, tt := range []struct{ classes, conditions, want string }{
		{`CACHE: {classes: {get: "GET"}}`, "", "dependencies.CACHE.classes: only a PostgreSQL dependency (statement classes) or an HTTP one (route classes) has classes; CACHE is reached over TCP"},
		{`API: {classes: {` + strings.Join(many, ", ") + `}}`, "", "dependencies.API.classes: at most 32 classes, got 33"},
		{"", `{name: x, dependency: API, faults: [{type: latency, latency: 1ms, match: "("}]}`, "routes.yaml:15: conditions[1].faults[0].match: dependency API is an HTTP one, whose faults match a route: error parsing regexp"},
		{"", `{name: x, dependency: API, faults: [{type: error, match: "select * from t"}]}`, "conditions[1].faults[0].match: dependency API is an HTTP one, whose faults match a route: \"select\" before the space"},
		{"", `{name: x, dependency: CACHE, faults: [{type: latency, latency: 1ms, match: "^/x"}]}`, "conditions[1].faults[0].match: only a fault on a PostgreSQL dependency (statements) or an HTTP one (routes) has a match; CACHE is reached over TCP"},
	} {
		text := fmt.Sprintf(routesSpec, "")
		if tt.classes != "" {
			text = strings.Replace(text, `API: {classes: {report: "^/reports/", items: "GET ^/items/"}}`, tt.classes, 1)
		}
		if tt.conditions != "" {
			text = strings.Replace(text, "audit: {faults: [slow]}\n", "audit: {}\nconditions:\n  - healthy\n  - "+tt.conditions+"\n", 1)
		}
		_, err := Parse("routes.yaml", []byte(text))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s%s: error %v,\nwant %q", tt.classes, tt.conditions, err, tt.want)
		} else if strings.Count(err.Error(), "\n") > 0 {
			t.Errorf("%s%s: more than one error: %v", tt.classes, tt.conditions, err)
		}
	}
}
