package spec

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/loadgen"
)

// TestLeakHuntPlan: the leak-hunt preset's runs carry a probe phase before
// the baseline and one after the recovery (every endpoint paused, a burst
// per endpoint in turn, filling its pool and queue three times over, the
// probe's latency on every proxy, not judged for validity), the cancel
// condition's clients give up on half of /a's requests after 0.5T in the
// fault phase, and the spike condition's bursts fall inside the fault
// phase with T to drain.
func TestLeakHuntPlan(t *testing.T) {
	b, err := PresetSource("leak-hunt")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse("leak-hunt.yaml", b)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	T := s.Service.Timeout.D
	for _, r := range p.Runs {
		var names []string
		start := map[string]time.Duration{}
		var at time.Duration
		for _, ph := range r.Load.Phases {
			names = append(names, ph.Name)
			start[ph.Name] = at
			at += ph.Duration
			if strings.HasPrefix(ph.Name, "probe") && (ph.Rates["a"] != 0 || ph.Rates["b"] != 0 || len(ph.Rates) != 2) {
				t.Errorf("%s %s: rates %v, want every endpoint paused", r.ID, ph.Name, ph.Rates)
			}
		}
		want := []string{rundata.PhaseWarmup, rundata.PhaseProbeBefore, rundata.PhaseBaseline, rundata.PhaseFault, rundata.PhaseRecovery, rundata.PhaseProbeAfter}
		if !slices.Equal(names, want) {
			t.Fatalf("%s: phases %v, want %v", r.ID, names, want)
		}
		for _, ph := range []string{rundata.PhaseProbeBefore, rundata.PhaseProbeAfter} {
			if !slices.Contains(r.Load.ExcludeFromValidity, ph) {
				t.Errorf("%s: %s is judged for validity", r.ID, ph)
			}
		}
		size := 3 * (10 + 10)
		if r.Mode == ModeShared {
			size = 3 * (20 + 20)
		}
		var probes, spikes []loadgen.Burst
		for _, b := range r.Load.Bursts {
			if strings.HasPrefix(b.Label, "probe") {
				probes = append(probes, b)
			} else {
				spikes = append(spikes, b)
			}
		}
		if len(probes) != 2*probeRounds*2 {
			t.Errorf("%s: %d probe bursts, want %d rounds of one per endpoint per probe phase", r.ID, len(probes), probeRounds)
		}
		for _, b := range probes {
			if b.Requests != size || b.At < start[rundata.PhaseProbeBefore] || (b.At > start[rundata.PhaseBaseline] && b.At < start[rundata.PhaseProbeAfter]) {
				t.Errorf("%s: probe burst %+v, want %d requests inside a probe phase", r.ID, b, size)
			}
		}
		if len(r.ProbeFaults) != 2 || r.ProbeFaults[0].Faults[0].Params.(faultproxy.Delay).Latency != T/4 {
			t.Errorf("%s: probe faults %+v, want 0.25T on both proxies", r.ID, r.ProbeFaults)
		}
		var fault loadgen.Phase
		for _, ph := range r.Load.Phases {
			if ph.Name == rundata.PhaseFault {
				fault = ph
			}
		}
		switch r.Condition {
		case CondCancel:
			if c := fault.Cancel["a"]; c.Share != 0.5 || c.After != T/2 || len(fault.Cancel) != 1 {
				t.Errorf("%s: fault phase cancel %v, want half of /a's after 0.5T", r.ID, fault.Cancel)
			}
			if len(r.Faults) != 1 || r.Faults[0].Faults[0].Type != "latency" {
				t.Errorf("%s: faults %+v, want A slow", r.ID, r.Faults)
			}
		case CondSpike:
			fs, fe := start[rundata.PhaseFault], start[rundata.PhaseRecovery]
			if len(spikes) != 4 {
				t.Errorf("%s: %d spike bursts in a 4 s fault phase every 1 s, want 4", r.ID, len(spikes))
			}
			for _, b := range spikes {
				if b.Target != "a" || b.At < fs || b.At+T > fe || b.Requests != size {
					t.Errorf("%s: spike burst %+v, want /a's, %d requests, inside the fault phase with T to drain", r.ID, b, size)
				}
			}
			if len(r.Faults) != 0 {
				t.Errorf("%s: faults %+v, want A healthy", r.ID, r.Faults)
			}
		default:
			if len(spikes) != 0 || len(fault.Cancel) != 0 {
				t.Errorf("%s: bursts %v cancel %v, want none", r.ID, spikes, fault.Cancel)
			}
		}
	}
}

// TestAftermathSpecErrors: bad cancels, bursts and probes are file:line
// errors naming the field.
func TestAftermathSpecErrors(t *testing.T) {
	for in, want := range map[string]string{
		"name: x\nconditions:\n  - {name: c, cancel: {share: 2, after: 0.5T}}\n":                  "x.yaml:3: conditions[0].cancel.share: must be in (0, 1], got 2",
		"name: x\nconditions:\n  - {name: c, cancel: {share: 0.5, after: 5s}}\n":                  "conditions[0].cancel.after: must be positive and below load.client_timeout",
		"name: x\nconditions:\n  - {name: c, cancel: {share: 0.5, after: 1ms, endpoints: [z]}}\n": "conditions[0].cancel.endpoints[0]: must be one of [a b], got \"z\"",
		"name: x\nconditions:\n  - {name: s, bursts: {every: 10ms}}\n":                            "conditions[0].bursts.every: must be at least T",
		"name: x\nconditions:\n  - {name: s, bursts: {requests: 5000}}\n":                         "conditions[0].bursts.requests: must be between 1 and 2000",
		"name: x\nload: {probe: {latency: 1T}}\n":                                                 "load.probe.latency: must be in [0, T)",
	} {
		_, err := Parse("x.yaml", []byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", in, err, want)
		}
	}
}
