package spec

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/faultproxy"
)

// payloadSpec gives B a payload stub and A a payload fault, pins the
// service's GOMAXPROCS and names the CPU claim's runs.
const payloadSpec = `name: pay
service: {gomaxprocs: 1}
dependencies:
  B: {latency: 5ms, jitter: 1ms, payload: 8KiB}
conditions:
  - healthy
  - name: payload
    faults:
      - {type: latency, latency: 10ms}
      - {type: payload, size: 256KiB, percent: 50}
modes: [bulkhead]
expectations:
  cpu: {condition: payload}
  check: [CPU-NOT-ISOLATED]
`

// TestPayloadReachesStubProxyAndService: a dependency's payload reaches its
// stub's config and command line, a payload fault the proxy's faults (size
// in bytes), service.gomaxprocs the service's flags; the resolved spec
// keeps them all.
func TestPayloadReachesStubProxyAndService(t *testing.T) {
	s, err := Parse("pay.yaml", []byte(payloadSpec))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Runs {
		for _, c := range r.Components {
			args := strings.Join(c.Args(), " ")
			switch {
			case c.Dep != nil && c.Dep.Name == "B" && (c.Dep.Payload != 8<<10 || !strings.Contains(args, "--payload 8192")):
				t.Errorf("run %s: stub B %+v started with %q, want payload 8192", r.ID, c.Dep, args)
			case c.Dep != nil && c.Dep.Name == "A" && (c.Dep.Payload != 0 || strings.Contains(args, "payload")):
				t.Errorf("run %s: stub A %+v started with %q, want no payload", r.ID, c.Dep, args)
			case c.Service != nil && (c.Service.Config.GOMAXPROCS != 1 || !strings.Contains(args, "--gomaxprocs 1")):
				t.Errorf("run %s: service %+v started with %q, want --gomaxprocs 1", r.ID, c.Service.Config, args)
			}
		}
	}
	i := slices.IndexFunc(p.Runs, func(r plan.Run) bool { return r.Condition == "payload" })
	faults := p.Runs[i].Faults
	want := faultproxy.Fault{Type: faultproxy.TypePayload, Percent: 50, Params: faultproxy.Payload{Size: 256 << 10}}
	if len(faults) != 1 || faults[0].Component != "proxy-A" || len(faults[0].Faults) != 2 || !reflect.DeepEqual(faults[0].Faults[1], want) {
		t.Fatalf("payload run's faults %+v, want %+v second on proxy-A", faults, want)
	}
	if err := faultproxy.ValidateFaults(faults[0].Faults); err != nil {
		t.Errorf("the proxy refuses the planned faults: %v", err)
	}
	if got := s.Decidable([]string{"CPU-NOT-ISOLATED"}); len(got) != 1 {
		t.Errorf("Decidable(CPU-NOT-ISOLATED) = %v, want it decidable", got)
	}
	b, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Parse("resolved.yaml", b)
	if err != nil {
		t.Fatalf("resolved spec does not parse: %v\n%s", err, b)
	}
	if !reflect.DeepEqual(s.Dependencies, s2.Dependencies) || !reflect.DeepEqual(s.Conditions, s2.Conditions) ||
		s2.Service.GOMAXPROCS != 1 || !reflect.DeepEqual(s.Expectations.CPU, s2.Expectations.CPU) {
		t.Errorf("round trip differs:\n%+v %+v %+v\n%+v %+v %+v", s.Dependencies, s.Conditions, s.Expectations.CPU, s2.Dependencies, s2.Conditions, s2.Expectations.CPU)
	}
}

// TestPayloadErrorsNameFieldAndLine: a bad payload, payload fault,
// gomaxprocs or CPU claim is reported at its file, line and field.
func TestPayloadErrorsNameFieldAndLine(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"payload not a size", "name: t\ndependencies:\n  A:\n    payload: lots\n",
			`t.yaml:4: dependencies.A.payload: invalid size "lots"`},
		{"payload over the body cap", "name: t\ndependencies:\n  A:\n    payload: 2MiB\n",
			"t.yaml:4: dependencies.A.payload: 2MiB is more than the service reads of a body (1MiB)"},
		{"fault without size", "name: t\nconditions:\n  - name: x\n    faults:\n      - {type: payload}\n",
			"t.yaml:5: conditions[0].faults[0].size: must be between 2 and 67108864 bytes, got 0"},
		{"fault size over the cap", "name: t\nconditions:\n  - name: x\n    faults:\n      - type: payload\n        size: 4MiB\n",
			"t.yaml:6: conditions[0].faults[0].size: 4MiB is more than the service reads of a body"},
		{"size on a latency fault", "name: t\nconditions:\n  - name: x\n    faults:\n      - type: latency\n        latency: 1ms\n        size: 1KiB\n",
			"t.yaml:7: conditions[0].faults[0].size: only valid for type payload"},
		{"gomaxprocs negative", "name: t\nservice:\n  gomaxprocs: -1\n",
			"t.yaml:3: service.gomaxprocs: must be between 0 (the runtime's default) and 1024, got -1"},
		{"cpu claim without condition", "name: t\nexpectations:\n  cpu:\n    mode: bulkhead\n",
			"expectations.cpu.condition: required"},
		{"cpu claim unknown condition", "name: t\nexpectations:\n  cpu:\n    condition: heavy\n",
			`t.yaml:4: expectations.cpu.condition: no condition "heavy" in the matrix`},
		{"cpu claim unknown mode", "name: t\nconditions: [healthy, slow]\nexpectations:\n  cpu: {condition: slow, mode: split}\n",
			`expectations.cpu.mode: no mode "split" in the matrix`},
		{"cpu check without claim", "name: t\nexpectations:\n  check: [CPU-NOT-ISOLATED]\n",
			"t.yaml:3: expectations.check[0]: CPU-NOT-ISOLATED is judged only when expectations.cpu names its condition"},
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
