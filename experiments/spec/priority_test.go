package spec

import (
	"reflect"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// prioritySpec has /checkout and /recommend calling one dependency
// through one pool; %s is the modes' and expectations' YAML.
const prioritySpec = `name: prio
service: {pool_size: 24, queue: 0}
endpoints:
  - {name: checkout, dependency: cat}
  - {name: recommend, dependency: cat}
dependencies:
  cat: {latency: 100ms, jitter: 5ms}
load: {rates: {checkout: 30, recommend: 60}, arrivals: poisson}
conditions: [{name: surge, rates: {recommend: 300}}]
`

// TestPriorityReachesTheService: a mode's priority stage is the service's
// (its config and its command line), the resolved spec keeps it, and the
// Little's-law preview caps the sheddable endpoint at the unreserved
// permits.
func TestPriorityReachesTheService(t *testing.T) {
	s, err := Parse("prio.yaml", []byte(prioritySpec+`modes:
  - shared
  - name: reserved
    pools: shared
    priority: {classes: {checkout: critical, recommend: sheddable}, reserved: {shared: 10}}
expectations:
  victim: checkout
  priority: {condition: surge, reserved: reserved, unreserved: shared}
  check: [PRIORITY-RESERVED]
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	want := &service.PriorityConfig{Classes: map[string]service.Class{"checkout": service.ClassCritical, "recommend": service.ClassSheddable},
		Reserved: map[string]int{service.SharedPool: 10}}
	for _, r := range p.Runs {
		for _, c := range r.Components {
			if c.Kind != plan.KindService {
				continue
			}
			args := strings.Join(c.Args(), " ")
			switch r.Mode {
			case "reserved":
				if !reflect.DeepEqual(c.Service.Config.Priority, want) ||
					!strings.Contains(args, "--priority --priority-class checkout=critical --priority-class recommend=sheddable --priority-reserved shared=10") {
					t.Errorf("run %s: priority %+v, command line %q; want %+v", r.ID, c.Service.Config.Priority, args, want)
				}
			default:
				if c.Service.Config.Priority != nil || strings.Contains(args, "--priority") {
					t.Errorf("run %s: priority %+v, command line %q; want none", r.ID, c.Service.Config.Priority, args)
				}
			}
		}
	}
	for _, tc := range []struct {
		mode  string
		fault float64
	}{{"shared", 33}, {"reserved", 3 + 14}} {
		pools := s.Preview(s.condition("surge"), s.mode(tc.mode))
		if len(pools) != 1 || pools[0].PredictedDemand[rundata.PhaseFault] != tc.fault {
			t.Errorf("%s: preview %+v, want a fault demand of %v", tc.mode, pools, tc.fault)
		}
	}
	if got := s.Decidable([]string{"PRIORITY-RESERVED"}); len(got) != 1 {
		t.Errorf("PRIORITY-RESERVED undecidable: %s", s.Undecidable("PRIORITY-RESERVED"))
	}
	b, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "reserved:\n                shared: 10") && !strings.Contains(string(b), "shared: 10") {
		t.Errorf("the resolved spec lacks the reservation:\n%s", b)
	}
	s.Expectations.Priority = nil
	if why := s.Undecidable("PRIORITY-RESERVED"); !strings.Contains(why, "expectations.priority names its condition and modes") {
		t.Errorf("without expectations.priority: %q", why)
	}
}

// TestPriorityErrors: a mode's priority stage and expectations.priority
// are checked, each error naming the file, the line and the field.
func TestPriorityErrors(t *testing.T) {
	const roles = "expectations:\n  victim: checkout\n  priority: {condition: surge, reserved: reserved, unreserved: shared}\n"
	mode := func(priority string) string {
		return "modes:\n  - shared\n  - name: reserved\n    pools: shared\n    priority: " + priority + "\n"
	}
	const ok = "{classes: {checkout: critical, recommend: sheddable}, reserved: {shared: 10}}"
	for _, tt := range []struct{ name, yaml, want string }{
		{"the preset's layout", mode(ok) + roles, ""},
		{"class by header", strings.Replace(prioritySpec, "dependency: cat}\n  - {name: recommend, dependency: cat}",
			"dependency: cat}\n  - {name: recommend, dependency: cat, headers: {x-priority: sheddable}}", 1) +
			mode("{reserved: {shared: 10}}") + roles, "-"},
		{"default sheddable", mode("{default: sheddable, classes: {checkout: critical}, reserved: {shared: 10}}") + roles, ""},
		{"unknown endpoint", mode("{classes: {cart: critical}}"), `prio.yaml:14: modes[1].priority.classes: no endpoint "cart" (endpoints: checkout, recommend)`},
		{"unknown class", mode("{classes: {checkout: vip}}"), `prio.yaml:14: modes[1].priority.classes.checkout: class must be "critical" or "sheddable", got "vip"`},
		{"unknown pool", mode("{reserved: {a: 2}}"), `prio.yaml:14: modes[1].priority.reserved: no pool "a" (pools: shared)`},
		{"more than the pool", mode("{reserved: {shared: 25}}"), `prio.yaml:14: modes[1].priority.reserved.shared: must be between 0 and the pool's size 24, got 25`},
		{"bad header", mode("{header: 'x y'}"), `modes[1].priority.header: "x y" is not a valid header name`},
		{"bad default", mode("{default: low}"), `modes[1].priority.default: class must be`},
		{"a built-in mode", "modes:\n  - name: shared\n    priority: {reserved: {shared: 2}}\n",
			"prio.yaml:12: modes[0].priority: the built-in modes shared and bulkhead have no priority stage: name your mode (e.g. reserved) and set pools: shared"},
		{"no such condition", mode(ok) + strings.Replace(roles, "condition: surge", "condition: slow", 1),
			`prio.yaml:17: expectations.priority.condition: no condition "slow" in the matrix`},
		{"no such mode", mode(ok) + strings.Replace(roles, "reserved: reserved", "reserved: nope", 1), `expectations.priority.reserved: no mode "nope" in the matrix`},
		{"the same mode twice", mode(ok) + strings.Replace(roles, "unreserved: shared", "unreserved: reserved", 1),
			`expectations.priority.unreserved: must differ from the reserved mode "reserved"`},
		{"reserved mode without a stage", mode(ok) + strings.Replace(roles, "reserved: reserved, unreserved: shared", "reserved: shared, unreserved: reserved", 1),
			"expectations.priority.reserved: mode \"shared\" has no priority stage: give it priority: {classes: {checkout: critical, recommend: sheddable}, reserved: {shared: N}}"},
		{"unreserved mode with a reservation", mode(ok) + "  - name: other\n    pools: shared\n    priority: {reserved: {shared: 1}}\n" +
			strings.Replace(roles, "unreserved: shared", "unreserved: other", 1),
			`expectations.priority.unreserved: mode "other" reserves 1 permits of pool shared: the unreserved mode is the same pool without a reservation`},
		{"victim sheddable", mode("{classes: {checkout: sheddable, recommend: sheddable}, reserved: {shared: 10}}") + roles,
			`expectations.priority.reserved: mode "reserved": /checkout (the victim) is sheddable; the claim's victim is the critical class`},
		{"culprit critical by default", mode("{reserved: {shared: 10}}") + roles,
			`expectations.priority.reserved: mode "reserved": /recommend (the culprit) is critical; the claim's culprit is the sheddable class`},
		{"nothing reserved", mode("{classes: {checkout: critical, recommend: sheddable}}") + roles,
			`expectations.priority.reserved: mode "reserved" reserves no permits of pool shared for the critical class (priority.reserved.shared)`},
		{"separate pools", mode(ok) + "  - {name: split, pools: bulkhead}\n" + strings.Replace(roles, "unreserved: shared", "unreserved: split", 1),
			`expectations.priority.unreserved: mode "split": /checkout and /recommend draw from different pools`},
	} {
		src := prioritySpec + tt.yaml
		if tt.want == "-" {
			src, tt.want = tt.yaml, ""
		}
		_, err := Parse("prio.yaml", []byte(src))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want it to contain %q", tt.name, err, tt.want)
		}
	}
	_, err := Parse("prio.yaml", []byte(prioritySpec+`modes:
  - name: reserved
    pools: shared
    priority: {reserved: {shared: 2}}
external:
  upstreams: {cat: "http://127.0.0.1:9001"}
  proxies: {cat: "127.0.0.1:7001"}
  targets: {checkout: "http://127.0.0.1:8080/checkout", recommend: "http://127.0.0.1:8080/recommend"}
`))
	if want := "modes[0].priority: configures the built-in service's priority stage"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("external: error %v, want %q", err, want)
	}
}

// TestPriorityWarnsBelowDemand: a reservation below the critical class's
// demand by Little's law in some condition is warned about, one at or
// above it is not.
func TestPriorityWarnsBelowDemand(t *testing.T) {
	for _, tc := range []struct {
		reserved string
		warn     bool
	}{{"2", true}, {"3", false}, {"10", false}} {
		s, err := Parse("prio.yaml", []byte(prioritySpec+"modes:\n  - name: r\n    pools: shared\n    priority: {classes: {recommend: sheddable}, reserved: {shared: "+tc.reserved+"}}\nexpectations: {victim: checkout}\n"))
		if err != nil {
			t.Fatal(err)
		}
		w := strings.Join(s.Warnings(), "\n")
		want := "modes[0].priority.reserved.shared: " + tc.reserved + " permits reserved for the critical class, whose demand under surge is 3 by Little's law"
		if strings.Contains(w, want) != tc.warn {
			t.Errorf("reserved %s: warnings %q; want the warning: %v", tc.reserved, w, tc.warn)
		}
	}
}
