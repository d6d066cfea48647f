package spec

import (
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/loadgen"
)

// extOwn is an external spec of one mode, the user's service as it runs;
// %s is added at its end (load, service, pools).
const extOwn = `name: own
external:
  targets:   {a: "http://127.0.0.1:8080/a", b: "http://127.0.0.1:8080/b"}
  upstreams: {A: "http://127.0.0.1:9001", B: "http://127.0.0.1:9002"}
  proxies:   {A: "127.0.0.1:7001", B: "127.0.0.1:7002"}
  canary: "http://127.0.0.1:8080/healthz"
  rules: [{status: "503", class: rejected}]
  metrics: {url: "http://127.0.0.1:8080/metrics", in_use: pool_in_use}
modes: [shared]
%s`

// TestDefaultArrivals: an audit and every spec of a user's own service load
// with Poisson arrivals unless the spec says otherwise (or asks for a
// lockstep, which only constant arrivals have); the built-in service's
// other experiments keep constant arrivals, as their reference results
// were measured. The choice is written into the resolved spec (the copy in
// a results folder) and survives a round trip.
func TestDefaultArrivals(t *testing.T) {
	for _, tt := range []struct {
		name, yaml, want string
		defaulted        bool
	}{
		{"built-in experiment", minimal, loadgen.ArrivalsConstant, true},
		{"built-in audit", "name: t\naudit: {faults: [slow]}\n", loadgen.ArrivalsPoisson, true},
		{"external", strings.Replace(extOwn, "%s", "", 1), loadgen.ArrivalsPoisson, true},
		{"external audit", strings.Replace(strings.Replace(extOwn, "%s", "audit: {faults: [slow]}\n", 1), "modes: [shared]\n", "", 1), loadgen.ArrivalsPoisson, true},
		{"external, constant written", strings.Replace(extOwn, "%s", "load: {arrivals: constant}\n", 1), loadgen.ArrivalsConstant, false},
		{"external, lockstep written", strings.Replace(extOwn, "%s", "load: {lockstep: true}\n", 1), loadgen.ArrivalsConstant, true},
		{"built-in, poisson written", "name: t\nload: {arrivals: poisson}\n", loadgen.ArrivalsPoisson, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse("t.yaml", []byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if s.Load.Arrivals != tt.want || s.ArrivalsDefaulted() != tt.defaulted {
				t.Fatalf("arrivals %q (defaulted %v), want %q (%v)", s.Load.Arrivals, s.ArrivalsDefaulted(), tt.want, tt.defaulted)
			}
			b, err := s.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), "arrivals: "+tt.want) {
				t.Errorf("resolved spec does not record arrivals: %s:\n%s", tt.want, b)
			}
			back, err := Parse("t.yaml", b)
			if err != nil {
				t.Fatal(err)
			}
			if back.Load.Arrivals != tt.want {
				t.Errorf("round trip: arrivals %q, want %q", back.Load.Arrivals, tt.want)
			}
			if line := s.LoadLine(); !strings.Contains(line, "arrivals "+tt.want) || strings.Contains(line, "default") != tt.defaulted {
				t.Errorf("load line %q: want arrivals %s, the default named: %v", line, tt.want, tt.defaulted)
			}
		})
	}
}

// TestConstantArrivalsWarned: validate warns when constant arrivals meet a
// pool that several endpoints share without a queue, or a service of the
// user's own whose queueing the spec does not declare — one sentence why
// and how to change it — and not otherwise.
func TestConstantArrivalsWarned(t *testing.T) {
	const fix = "write load.arrivals: poisson"
	for _, tt := range []struct {
		name, yaml, want string
	}{
		{"shared pool without a queue", "name: t\nservice: {queue: 0, max_wait: 0}\nmodes: [shared]\n", "the pool shared of mode shared, which 2 endpoints share without a queue"},
		{"a group without a queue", "name: t\nservice: {queue: 0, max_wait: 0}\nendpoints: [{name: a, dependency: A}, {name: b, dependency: B}, {name: c, dependency: C}]\n" +
			"modes: [{name: g, pools: bulkhead, pool_groups: {core: [a, b]}}]\n", "the pool core of mode g, which 2 endpoints share"},
		{"shared pool with a queue", "name: t\nmodes: [shared]\n", ""},
		{"bulkheads of one endpoint each", "name: t\nservice: {queue: 0, max_wait: 0}\nmodes: [bulkhead]\n", ""},
		{"poisson", "name: t\nservice: {queue: 0, max_wait: 0}\nload: {arrivals: poisson}\nmodes: [shared]\n", ""},
		{"external, queueing unknown", strings.Replace(extOwn, "%s", "load: {arrivals: constant}\n", 1), "your service (mode shared), whose pools and queues the spec does not declare"},
		{"external, declared pool without a queue", strings.Replace(strings.Replace(extOwn, "%s", "load: {arrivals: constant}\n", 1),
			"modes: [shared]", "  pools: [{name: out, size: 8, endpoints: [a, b]}]\nmodes: [shared]", 1), "the pool out of mode shared, which 2 endpoints share without a queue"},
		{"external, declared pool with a queue", strings.Replace(strings.Replace(extOwn, "%s", "load: {arrivals: constant}\n", 1),
			"modes: [shared]", "  pools: [{name: out, size: 8, queue: 8, endpoints: [a, b]}]\nmodes: [shared]", 1), ""},
		{"external, poisson by default", strings.Replace(extOwn, "%s", "", 1), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := warningOf(t, tt.yaml, "load.arrivals:")
			switch {
			case tt.want == "" && got != "":
				t.Errorf("warned: %s", got)
			case tt.want != "" && (!strings.Contains(got, tt.want) || !strings.Contains(got, fix) || strings.Count(got, ". ") > 0):
				t.Errorf("warning %q, want one sentence naming %q and saying %q", got, tt.want, fix)
			}
		})
	}
}

// TestShortFaultPhaseWarned: a fault phase below 4 T is warned about with
// the value to use — T the service's timeout, or for a service of the
// user's own a longer latency fault (its real timeout is its own).
func TestShortFaultPhaseWarned(t *testing.T) {
	for _, tt := range []struct{ name, yaml, want string }{
		{"default phases at T = 250ms", minimal, ""},
		{"default phases at T = 2s", "name: t\nservice: {timeout: 2s}\n", "phases.fault: 2.5s is 1.25 T (T = service.timeout 2s): "},
		{"relative phase", "name: t\nservice: {timeout: 2s}\nphases: {fault: 4T}\n", ""},
		{"external latency beyond T", strings.Replace(extOwn, "%s", "conditions:\n  - {name: slower, dependency: A, faults: [{type: latency, latency: 900ms}]}\n", 1),
			"phases.fault: 2.5s is 2.78 T (a call to A held up to 900ms under slower, longer than service.timeout 250ms): "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := warningOf(t, tt.yaml, "phases.fault:")
			switch {
			case tt.want == "" && got != "":
				t.Errorf("warned: %s", got)
			case tt.want != "" && !strings.HasPrefix(got, tt.want):
				t.Errorf("warning %q, want it to start %q", got, tt.want)
			}
			if tt.want != "" && !strings.Contains(got, "use phases.fault: ") {
				t.Errorf("warning %q does not say the value to use", got)
			}
		})
	}
}

// warningOf parses a spec and returns its warning that starts with prefix
// ("" if none).
func warningOf(t *testing.T, yaml, prefix string) string {
	t.Helper()
	s, err := Parse("t.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range s.Warnings() {
		if strings.HasPrefix(w, prefix) {
			return w
		}
	}
	return ""
}
