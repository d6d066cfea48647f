package spec

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/internal/claims"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// processesSpec has the three layouts of the processes claim, and a
// fourth whose pool group puts two endpoints in one process.
const processesSpec = `name: walls
service: {pool_size: 26, queue: 26, gomaxprocs: 1}
endpoints: [{name: a, dependency: A}, {name: b, dependency: B}, {name: c, dependency: C}]
conditions:
  - healthy
  - {name: payload, dependency: A, faults: [{type: payload, size: 64KiB}]}
  - slow
modes:
  - shared
  - {name: bulkhead, pool_sizes: {a: 6, b: 10, c: 10}, queues: {a: 6, b: 10, c: 10}}
  - {name: processes, pools: bulkhead, pool_sizes: {a: 6, b: 10, c: 10}, queues: {a: 6, b: 10, c: 10}, processes: per-endpoint}
  - {name: grouped, pools: bulkhead, pool_groups: {bc: [b, c]}, processes: per-endpoint,
     policies: {A: {timeout: 0.5T}, B: {timeout: 0.5T}}}
expectations:
  victim: b
  culprit: a
  processes: {cpu: payload}
  check: [PROCESS-WALL]
`

// TestProcessesPlan: a mode with processes: per-endpoint starts one
// service process per pool of its bulkhead layout (service-1..n), each
// with only its pool's endpoints, upstreams and policies and the pool
// sized as in one process; each endpoint's load goes to its process alone,
// the canary to each in turn; the meta names the processes and what each
// serves, and keeps the layout's pools whole. A mode of one process plans
// as before.
func TestProcessesPlan(t *testing.T) {
	s, err := Parse("walls.yaml", []byte(processesSpec))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]plan.Run{}
	for _, r := range p.Runs {
		if r.Condition == "slow" {
			runs[r.Mode] = r
		}
	}
	services := func(r plan.Run) map[string]*plan.Service {
		out := map[string]*plan.Service{}
		for _, c := range r.Components {
			if c.Kind == plan.KindService {
				out[c.Name] = c.Service
			}
		}
		return out
	}
	one := runs["bulkhead"]
	if got := services(one); len(got) != 1 || got[rundata.ServiceComponent] == nil || len(one.Meta.Instances) != 0 || one.Meta.InstanceEndpoints != nil {
		t.Errorf("one process: services %v, instances %v %v; want the one service", got, one.Meta.Instances, one.Meta.InstanceEndpoints)
	}

	procs := runs["processes"]
	svcs := services(procs)
	want := map[string][]string{"service-1": {"a"}, "service-2": {"b"}, "service-3": {"c"}}
	sizes := map[string]int{"service-1": 6, "service-2": 10, "service-3": 10}
	if len(svcs) != 3 {
		t.Fatalf("processes: services %v, want service-1..3", svcs)
	}
	for name, eps := range want {
		sv := svcs[name]
		if sv == nil {
			t.Fatalf("processes: no component %s", name)
		}
		if got := sv.Config.EndpointNames(); !slices.Equal(got, eps) {
			t.Errorf("%s: endpoints %v, want %v", name, got, eps)
		}
		if len(sv.Upstreams) != 1 || sv.Upstreams[eps[0]] == (plan.Address{}) {
			t.Errorf("%s: upstreams %v, want %s's alone", name, sv.Upstreams, eps[0])
		}
		args := strings.Join(plan.Component{Kind: plan.KindService, Listen: anyLoopback, Service: sv}.Args(), " ")
		for _, w := range []string{"--mode bulkhead", "--pool-size " + strconv.Itoa(sizes[name]), "--queue " + strconv.Itoa(sizes[name]), "--gomaxprocs 1"} {
			if !strings.Contains(args, w) {
				t.Errorf("%s: started with %q, want %q", name, args, w)
			}
		}
	}
	for i, e := range procs.Load.Endpoints {
		comp := rundata.InstanceComponent(i + 1)
		if e.Target.Component != comp || e.Target.Path != "/"+e.Name || e.Targets != nil {
			t.Errorf("endpoint %s: target %+v (targets %v), want %s's /%s alone", e.Name, e.Target, e.Targets, comp, e.Name)
		}
	}
	if c := procs.Load.Canary; c == nil || len(c.Targets) != 3 || c.Targets[2].Component != "service-3" || c.Targets[0].Path != "/healthz" {
		t.Errorf("canary %+v, want /healthz on each of the 3 processes", c)
	}
	if !slices.Equal(procs.Meta.Instances, []string{"service-1", "service-2", "service-3"}) || !slices.Equal(procs.Meta.InstanceEndpoints["service-2"], []string{"b"}) {
		t.Errorf("meta instances %v, endpoints %v", procs.Meta.Instances, procs.Meta.InstanceEndpoints)
	}
	var limits []int
	for _, pl := range procs.Meta.Pools {
		limits = append(limits, pl.Limit)
	}
	if !slices.Equal(limits, []int{6, 10, 10}) {
		t.Errorf("meta pools %v, want the layout's 6, 10, 10 (not summed over processes)", limits)
	}
	if n := s.ProcessesOf(s.mode("processes")); n != 3 {
		t.Errorf("ProcessesOf(processes) = %d, want 3", n)
	}
	if n := s.ProcessesOf(s.mode("shared")); n != 1 {
		t.Errorf("ProcessesOf(shared) = %d, want 1", n)
	}

	// A pool group is one pool, so one process: b and c together, with
	// their policies; a alone with its own.
	g := services(func() plan.Run {
		for _, r := range p.Runs {
			if r.Mode == "grouped" {
				return r
			}
		}
		return plan.Run{}
	}())
	if len(g) != 2 || !slices.Equal(g["service-2"].Config.EndpointNames(), []string{"b", "c"}) ||
		len(g["service-2"].Config.Policies) != 1 || len(g["service-1"].Config.Policies) != 1 {
		t.Errorf("grouped: %d processes; service-2 serves %v with policies %v", len(g), g["service-2"].Config.EndpointNames(), g["service-2"].Config.Policies)
	}
	if got := s.ProcessesLine(s.mode("grouped")); !strings.Contains(got, "service-2 serves /b, /c (pool bc of") || !strings.Contains(got, "GOMAXPROCS 1 each (2 in all)") {
		t.Errorf("ProcessesLine = %q", got)
	}
	if got := s.Undecidable(claims.ProcessWall); got != "" {
		t.Errorf("PROCESS-WALL undecidable: %s", got)
	}
}

// TestProcessesErrors: bad modes[i].processes and expectations.processes
// are reported with file, line and field.
func TestProcessesErrors(t *testing.T) {
	const modes = "modes:\n  - shared\n  - bulkhead\n  - {name: processes, pools: bulkhead, processes: per-endpoint}\n"
	const conds = "conditions:\n  - healthy\n  - {name: payload, faults: [{type: payload, size: 64KiB}]}\n  - slow\n"
	ext := "external:\n  upstreams: {A: \"http://127.0.0.1:9001\", B: \"http://127.0.0.1:9002\"}\n  proxies: {A: \"127.0.0.1:7001\", B: \"127.0.0.1:7002\"}\n  targets: {a: \"http://127.0.0.1:8080/a\", b: \"http://127.0.0.1:8080/b\"}\n"
	for _, tc := range []struct{ yaml, want string }{
		{"name: t\nmodes:\n  - name: bulkhead\n    processes: many\n", "t.yaml:4: modes[0].processes: must be one (every endpoint in one process, the default) or per-endpoint"},
		{"name: t\nmodes:\n  - {name: shared, processes: per-endpoint}\n", "t.yaml:3: modes[0].processes: per-endpoint puts each pool of a bulkhead layout in a process of its own: this mode's layout is shared"},
		{"name: t\nmodes:\n  - {name: bulkhead, processes: per-endpoint, instances: 2}\n", "t.yaml:3: modes[0].processes: per-endpoint runs one process per pool; a fleet (instances: 2)"},
		{"name: t\n" + ext + "modes:\n  - {name: bulkhead, processes: per-endpoint}\n", "modes[0].processes: your own service runs as the processes you start"},
		{"name: t\n" + conds + modes + "expectations:\n  processes: {slow: slow}\n", "t.yaml:11: expectations.processes.cpu: required"},
		{"name: t\n" + conds + modes + "expectations:\n  processes: {cpu: hot}\n", "expectations.processes.cpu: no condition \"hot\" in the matrix"},
		{"name: t\n" + conds + modes + "expectations:\n  processes: {cpu: payload, slow: payload}\n", "expectations.processes.slow: must differ from the CPU condition \"payload\""},
		{"name: t\n" + conds + modes + "expectations:\n  processes: {cpu: payload, mode: walls}\n", "expectations.processes.mode: no mode \"walls\" in the matrix (default: processes); modes that could: processes"},
		{"name: t\n" + conds + "modes: [shared, bulkhead]\nexpectations:\n  processes: {cpu: payload}\n", "expectations.processes.mode: no mode \"processes\" in the matrix (default: processes); add a mode such as {name: processes, pools: bulkhead, processes: per-endpoint}"},
		{"name: t\n" + conds + modes + "expectations:\n  processes: {cpu: payload, mode: shared}\n", "expectations.processes.mode: mode \"shared\" has no walls to judge"},
		{"name: t\n" + conds + modes + "expectations:\n  processes: {cpu: payload, in_process: processes}\n", "expectations.processes.in_process: mode \"processes\" is not a bulkhead layout in one process (pools: bulkhead, processes: per-endpoint)"},
		{"name: t\n" + conds + modes + "expectations:\n  processes: {cpu: payload, control: payload}\n", "expectations.processes.control: must differ from the condition \"payload\""},
		{"name: t\n" + conds + modes + "expectations:\n  processes: {cpu: payload, shared: bulkhead}\n", "expectations.processes.shared: mode \"bulkhead\" is not one shared pool"},
		{"name: t\n" + conds + modes + "expectations:\n  processes: {cpu: payload, max_p99_rise_t: 11}\n", "expectations.processes.max_p99_rise_t: must be between 0"},
		{"name: t\n" + conds + modes + "expectations:\n  processes: {cpu: payload, max_p99_rise_t: 0.2, min_p99_rise_t: 0.15}\n", "expectations.processes.max_p99_rise_t: must be at most min_p99_rise_t (0.15 T)"},
		{"name: t\n" + conds + modes + "expectations:\n  check: [PROCESS-WALL]\n", "PROCESS-WALL is judged only when expectations.processes names its CPU condition"},
	} {
		_, err := Parse("t.yaml", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.yaml, err, tc.want)
		}
	}
	// The breaking layout: the claim's walls pointed at the one-process
	// bulkheads is a valid spec (the claim is then NOT SUPPORTED).
	if _, err := Parse("t.yaml", []byte("name: t\n"+conds+modes+"expectations:\n  processes: {cpu: payload, mode: bulkhead}\n")); err != nil {
		t.Errorf("walls named as the one-process bulkheads: %v", err)
	}
}
