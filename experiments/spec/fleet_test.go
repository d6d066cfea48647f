package spec

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TestInstancesErrors: bad service.instances, modes[i].instances and
// expectations.fleet are reported with file, line and field.
func TestInstancesErrors(t *testing.T) {
	ext := "external:\n  upstreams: {A: \"http://127.0.0.1:9001\", B: \"http://127.0.0.1:9002\"}\n  proxies: {A: \"127.0.0.1:7001\", B: \"127.0.0.1:7002\"}\n  targets: {a: \"http://127.0.0.1:8080/a\", b: \"http://127.0.0.1:8080/b\"}\n"
	for _, tc := range []struct{ yaml, want string }{
		{"name: t\nservice:\n  instances: 0\n", "t.yaml:3: service.instances: must be between 1 and 64, got 0"},
		{"name: t\nservice: {instances: 65}\n", "t.yaml:2: service.instances: must be between 1 and 64, got 65"},
		{"name: t\nservice: {instances: two}\n", "t.yaml:2: service.instances"},
		{"name: t\nmodes:\n  - shared\n  - name: bulkhead\n    instances: -1\n", "t.yaml:5: modes[1].instances: must be between 1 and 64 (0: service.instances), got -1"},
		{"name: t\nmodes:\n  - {name: bulkhead, instances: 100}\n", "t.yaml:3: modes[0].instances: must be between 1 and 64"},
		{"name: t\n" + ext + "modes:\n  - {name: bulkhead, instances: 2}\n", "modes[0].instances: your own service runs as many instances as you start"},
		{"name: t\nexpectations:\n  fleet: {modes: [fleet], condition: slow}\n", "t.yaml:3: expectations.fleet.modes[0]: no mode \"fleet\" in the matrix"},
		{"name: t\nexpectations:\n  fleet: {modes: [shared], budget: nope, condition: slow}\n", "expectations.fleet.budget: no mode \"nope\" in the matrix"},
		{"name: t\nexpectations:\n  fleet: {modes: [shared], condition: stormy}\n", "expectations.fleet.condition: no condition \"stormy\" in the matrix"},
		{"name: t\nexpectations:\n  fleet: {modes: [shared], condition: slow, tolerance: 1.5}\n", "expectations.fleet.tolerance: must be a share in [0, 1)"},
		{"name: t\nexpectations:\n  check: [FLEET-MULTIPLIES]\n", "FLEET-MULTIPLIES is judged only when expectations.fleet names the fleets compared"},
		{"name: t\nexpectations:\n  fleet: {modes: [shared], condition: slow}\n  check: [FLEET-BUDGET]\n", "FLEET-BUDGET is judged only when expectations.fleet.budget names the remedy's mode"},
	} {
		_, err := Parse("t.yaml", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.yaml, err, tc.want)
		}
	}
}

// fleetSpec has a mode of 3 instances beside the default single one.
const fleetSpec = `name: t
service: {pool_size: 8, queue: 4}
conditions: [slow]
modes:
  - bulkhead
  - {name: fleet, pools: bulkhead, instances: 3}
`

// TestFleetPlan: a mode of N > 1 instances starts N service components
// (service-1..N) with the same configuration and upstreams, loads every
// endpoint and the canary round-robin over them, names them in the meta,
// and describes the fleet's pools (limits and queues times N, demand the
// fleet's); a mode of one instance plans exactly as before.
func TestFleetPlan(t *testing.T) {
	s, err := Parse("t.yaml", []byte(fleetSpec))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]plan.Run{}
	for _, r := range p.Runs {
		runs[r.Mode] = r
	}
	one, fleet := runs["bulkhead"], runs["fleet"]
	services := func(r plan.Run) (names []string) {
		for _, c := range r.Components {
			if c.Kind == plan.KindService {
				names = append(names, c.Name)
			}
		}
		return names
	}
	if got := services(one); !slices.Equal(got, []string{rundata.ServiceComponent}) {
		t.Errorf("one instance: services %v, want [service]", got)
	}
	if len(one.Meta.Instances) != 0 || one.Load.Endpoints[0].Targets != nil || one.Load.Canary.Targets != nil {
		t.Errorf("one instance: meta instances %v, targets %v, canary %v; want none", one.Meta.Instances, one.Load.Endpoints[0].Targets, one.Load.Canary.Targets)
	}
	want := []string{"service-1", "service-2", "service-3"}
	if got := services(fleet); !slices.Equal(got, want) || !slices.Equal(fleet.Meta.Instances, want) {
		t.Fatalf("fleet: services %v, meta instances %v; want %v", got, fleet.Meta.Instances, want)
	}
	for _, c := range fleet.Components[len(fleet.Components)-3:] {
		if !reflect.DeepEqual(c.Service.Config.Layout, fleetService(t, one).Config.Layout) || c.Service.Upstreams["a"] != plan.Of("proxy-A", "") {
			t.Errorf("%s: layout %+v upstreams %v, want the single instance's layout and proxy-A", c.Name, c.Service.Config.Layout, c.Service.Upstreams)
		}
	}
	for _, e := range append(fleet.Load.Endpoints, *fleet.Load.Canary) {
		path := "/" + e.Name
		if e.Name == rundata.CanaryEndpoint {
			path = "/healthz"
		}
		var got []string
		for _, a := range e.Targets {
			got = append(got, a.Component+a.Path)
		}
		if w := fmt.Sprintf("[service-1%[1]s service-2%[1]s service-3%[1]s]", path); fmt.Sprint(got) != w {
			t.Errorf("endpoint %s: targets %v, want %s", e.Name, got, w)
		}
	}
	for i, pl := range fleet.Meta.Pools {
		single := one.Meta.Pools[i]
		if pl.Limit != 3*single.Limit || pl.Queue != 3*single.Queue || pl.PredictedDemand[rundata.PhaseFault] != single.PredictedDemand[rundata.PhaseFault] {
			t.Errorf("pool %s: fleet %+v, single %+v: want limit and queue ×3, the same demand", pl.Name, pl, single)
		}
	}
}

func fleetService(t *testing.T, r plan.Run) *plan.Service {
	t.Helper()
	for _, c := range r.Components {
		if c.Service != nil {
			return c.Service
		}
	}
	t.Fatalf("run %s has no service", r.ID)
	return nil
}

// TestFleetSweep: a sweep over a mode's instances makes a variant per
// size, each planned with that many instances; service.instances is every
// mode's default and a mode's own value wins.
func TestFleetSweep(t *testing.T) {
	text := `name: t
service: {instances: 2}
conditions: [slow]
modes:
  - bulkhead
  - {name: fleet, pools: bulkhead}
sweep: {field: modes.fleet.instances, values: [1, 4]}
expectations:
  fleet: {modes: [fleet], condition: slow}
  check: [FLEET-MULTIPLIES]
`
	s, err := Parse("t.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, r := range p.Runs {
		got[r.Mode] = max(1, len(r.Meta.Instances))
	}
	want := map[string]int{"bulkhead": 2, "fleet.instances1": 1, "fleet.instances4": 4}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("instances per mode %v, want %v", got, want)
	}
}
