package spec

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// capacitySpec gives dependency A a finite capacity, and a condition that
// gives B one through its proxy.
const capacitySpec = `name: cap
dependencies:
  A: {latency: 20ms, capacity: 4, queue: 8}
conditions:
  - healthy
  - name: b-saturated
    dependency: B
    faults:
      - {type: capacity, capacity: 2, queue: 3, latency: 0.1T, jitter: 2ms, percent: 50}
modes: [shared]
`

// TestCapacityReachesStubAndProxy: a dependency's capacity and queue reach
// its stub's config and command line, a capacity fault the proxy's faults;
// a dependency without them starts as before.
func TestCapacityReachesStubAndProxy(t *testing.T) {
	s, err := Parse("cap.yaml", []byte(capacitySpec))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Runs {
		deps := map[string]*service.DepConfig{}
		args := map[string]string{}
		for _, c := range r.Components {
			if c.Dep != nil {
				deps[c.Dep.Name], args[c.Dep.Name] = c.Dep, strings.Join(c.Args(), " ")
			}
		}
		if a := deps["A"]; a == nil || a.Capacity != 4 || a.Queue != 8 || a.Latency != 20*time.Millisecond {
			t.Errorf("run %s: stub A %+v, want capacity 4, queue 8", r.ID, a)
		}
		if !strings.Contains(args["A"], "--capacity 4 --queue 8") {
			t.Errorf("run %s: stub A starts with %q, want --capacity 4 --queue 8", r.ID, args["A"])
		}
		if b := deps["B"]; b == nil || b.Capacity != 0 || b.Queue != 0 || strings.Contains(args["B"], "capacity") {
			t.Errorf("run %s: stub B %+v started with %q, want unlimited and no capacity flags", r.ID, b, args["B"])
		}
	}
	r := p.Runs[1]
	if r.Condition != "b-saturated" || len(r.Faults) != 1 || r.Faults[0].Component != "proxy-B" {
		t.Fatalf("run %s: faults %+v, want the capacity fault on proxy-B", r.ID, r.Faults)
	}
	want := faultproxy.Fault{Type: faultproxy.TypeCapacity, Percent: 50, Params: faultproxy.Capacity{Capacity: 2, Queue: 3,
		Latency: 25 * time.Millisecond, Jitter: 2 * time.Millisecond}}
	if got := r.Faults[0].Faults; len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Errorf("proxy-B faults %+v, want %+v", got, want)
	}
	if err := faultproxy.ValidateFaults(r.Faults[0].Faults); err != nil {
		t.Errorf("the proxy refuses the planned faults: %v", err)
	}

	// The resolved spec, written next to the results and read back on
	// --resume, keeps them.
	b, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Parse("resolved.yaml", b)
	if err != nil {
		t.Fatalf("resolved spec does not parse: %v\n%s", err, b)
	}
	if !reflect.DeepEqual(s.Dependencies, s2.Dependencies) || !reflect.DeepEqual(s.Conditions, s2.Conditions) {
		t.Errorf("round trip differs:\n%+v %+v\n%+v %+v", s.Dependencies, s.Conditions, s2.Dependencies, s2.Conditions)
	}
}

// TestCapacityErrorsNameFieldAndLine: a bad capacity or queue, of a
// dependency or of a capacity fault, is reported at its file, line and
// field.
func TestCapacityErrorsNameFieldAndLine(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"negative capacity", "name: t\ndependencies:\n  A:\n    capacity: -1\n",
			"t.yaml:4: dependencies.A.capacity: must be between 0 (unlimited) and 1048576, got -1"},
		{"queue without capacity", "name: t\ndependencies:\n  A:\n    latency: 10ms\n    queue: 5\n",
			"t.yaml:5: dependencies.A.queue: applies only with a capacity"},
		{"queue too long", "name: t\ndependencies:\n  B: {capacity: 2, queue: 20000}\n",
			"t.yaml:3: dependencies.B.queue: must be between 0 (up to 10000) and 10000, got 20000"},
		{"capacity not a number", "name: t\ndependencies:\n  A:\n    capacity: lots\n",
			`t.yaml:4: dependencies.A.capacity: want a whole number, got "lots"`},
		{"fault without capacity", "name: t\nconditions:\n  - name: x\n    faults:\n      - {type: capacity}\n",
			"t.yaml:5: conditions[0].faults[0].capacity: must be between 1 and 1048576, got 0"},
		{"fault queue negative", "name: t\nconditions:\n  - name: x\n    faults:\n      - type: capacity\n        capacity: 2\n        queue: -1\n",
			"t.yaml:7: conditions[0].faults[0].queue: must be between 0 (up to 10000) and 10000, got -1"},
		{"fault jitter over latency", "name: t\nconditions:\n  - name: x\n    faults:\n      - type: capacity\n        capacity: 2\n        latency: 1ms\n        jitter: 5ms\n",
			"t.yaml:8: conditions[0].faults[0].jitter: 5ms exceeds latency 1ms"},
		{"capacity on a latency fault", "name: t\nconditions:\n  - name: x\n    faults:\n      - type: latency\n        latency: 10ms\n        capacity: 3\n",
			"t.yaml:7: conditions[0].faults[0].capacity: only valid for type capacity"},
		{"queue on an error fault", "name: t\nconditions:\n  - name: x\n    faults:\n      - {type: error, queue: 3}\n",
			"t.yaml:5: conditions[0].faults[0].queue: only valid for type capacity"},
		{"two capacity faults", "name: t\nconditions:\n  - name: x\n    faults:\n      - {type: capacity, capacity: 1}\n      - {type: abort, percent: 1}\n      - {type: capacity, capacity: 2}\n",
			"t.yaml:7: conditions[0].faults[2].type: at most one capacity fault per condition (faults[0] is one)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tt.yaml))
			if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse(%q) error\n%v\nwant it to contain %q", tt.yaml, err, tt.want)
			}
		})
	}
}

// TestCapacityFaultDefaults: a capacity fault without a percent affects
// every request, like every fault of a spec.
func TestCapacityFaultDefaults(t *testing.T) {
	s, err := Parse("t.yaml", []byte("name: t\nconditions:\n  - name: x\n    faults: [{type: capacity, capacity: 3}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(s.Conditions, func(c Condition) bool { return c.Name == "x" })
	if f := s.Conditions[i].Faults[0]; f.Percent != 100 || f.Params["capacity"] != 3 || f.Params["queue"] != nil {
		t.Errorf("fault %+v, want percent 100, capacity 3, queue 0 (the proxy's default)", f)
	}
}
