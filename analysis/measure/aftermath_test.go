package measure

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/internal/synth"
	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// amRun builds a run in memory for the aftermath detectors: T = 250 ms,
// 250 ms windows and samples, phases warmup 2 s, baseline 5 s, fault 10 s
// and recovery (5 s unless set), two endpoints /a → A and /b → B of 200/s
// each, bulkheads of 10 (a, b). Each endpoint's window is what win says
// for its start; each sample is what sample says.
type amRun struct {
	recovery  time.Duration
	allowance time.Duration
	probes    bool
	shared    bool
	noPools   bool // no pool metrics (a user's service without them)
	hang      bool // the fault is a hang: calls last to T
	// quiet is how long the runner sampled the service after the load
	// (sample's t goes on past the recovery's end).
	quiet     time.Duration
	canaryMax func(t float64) time.Duration
	// win is an endpoint's window at t seconds from the fault's end
	// (negative before it): results, failed ones, their class and p99 ms.
	win func(ep string, t float64) (failed float64, class rundata.Class, p99 float64)
	// sample is, at t seconds from the fault's end, each pool's permits in
	// use and each proxy's calls in flight, peak and abandoned calls so far.
	sample func(t float64) (inUse map[string]float64, inflight, peak, cancelled map[string]float64)
}

var amT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (a amRun) build() *Run {
	rec := a.recovery
	if rec == 0 {
		rec = 5 * time.Second
	}
	r := &Run{Data: &rundir.Run{Entry: rundata.IndexEntry{ID: "x-r1", Condition: "x", Mode: "bulkhead", Repeat: 1}}}
	r.Data.Meta = rundata.RunMeta{ID: "x-r1", Status: rundata.StatusComplete, Valid: true, Timeout: synth.T, Window: synth.T,
		RecoveryAllowance: a.allowance, Canary: &rundata.CanaryInfo{Rate: 20, MaxP99: 25 * time.Millisecond}}
	spans := []struct {
		name string
		d    time.Duration
	}{{rundata.PhaseWarmup, 2 * time.Second}}
	if a.probes {
		spans = append(spans, struct {
			name string
			d    time.Duration
		}{rundata.PhaseProbeBefore, time.Second})
	}
	spans = append(spans, []struct {
		name string
		d    time.Duration
	}{{rundata.PhaseBaseline, 5 * time.Second}, {rundata.PhaseFault, 10 * time.Second}, {rundata.PhaseRecovery, rec}}...)
	if a.probes {
		spans = append(spans, struct {
			name string
			d    time.Duration
		}{rundata.PhaseProbeAfter, time.Second})
	}
	t := amT0
	var fe time.Time
	for _, s := range spans {
		r.Data.Meta.Phases = append(r.Data.Meta.Phases, rundata.PhaseSpan{Name: s.name, Start: t, End: t.Add(s.d)})
		t = t.Add(s.d)
		if s.name == rundata.PhaseFault {
			fe = t
		}
	}
	end := t
	pools := map[string]string{"a": "a", "b": "b"}
	if a.shared {
		pools = map[string]string{"a": "shared", "b": "shared"}
		r.Data.Meta.Pools = []rundata.PoolInfo{{Name: "shared", Limit: 20, Queue: 20, MaxWait: synth.T, Endpoints: []string{"a", "b"}}}
	} else {
		r.Data.Meta.Pools = []rundata.PoolInfo{{Name: "a", Limit: 10, Queue: 10, MaxWait: synth.T, Endpoints: []string{"a"}},
			{Name: "b", Limit: 10, Queue: 10, MaxWait: synth.T, Endpoints: []string{"b"}}}
	}
	for _, ep := range []string{"a", "b"} {
		r.Data.Meta.Endpoints = append(r.Data.Meta.Endpoints, rundata.EndpointInfo{Name: ep, Dependency: strings.ToUpper(ep), Pool: pools[ep], Rate: 200})
	}
	base := map[string]*rundata.PhaseStats{}
	for i, ws := 0, amT0; ws.Before(end); i, ws = i+1, ws.Add(synth.T) {
		phase := phaseAt(r.Data, ws)
		since := ws.Sub(fe).Seconds()
		for _, ep := range []string{"a", "b"} {
			failShare, class, p99 := 0.0, rundata.ClassRejected, 15.0
			if a.win != nil {
				failShare, class, p99 = a.win(ep, since)
			}
			w := rundata.Window{Endpoint: ep, Phase: phase, Index: i, Start: ws, Offset: ws.Sub(amT0), Duration: synth.T}
			failed := int64(math.Round(50 * failShare))
			w.Counts[rundata.ClassOK] = 50 - failed
			w.Counts[class] += failed
			w.Latency = synth.Q(10, p99, 50)
			r.Data.Windows = append(r.Data.Windows, w)
			if phase == rundata.PhaseBaseline {
				ps := base[ep]
				if ps == nil {
					ps = &rundata.PhaseStats{Endpoint: ep, Phase: phase}
					base[ep] = ps
				}
				for c, n := range w.Counts {
					ps.Counts[c] += n
				}
				ps.Latency = synth.Q(10, max(float64(ps.Latency.P99)/1e6, p99), ps.Latency.Count+50)
			}
		}
		cw := rundata.Window{Endpoint: rundata.CanaryEndpoint, Phase: phase, Index: i, Start: ws, Duration: synth.T}
		cw.Counts[rundata.ClassOK] = 5
		cw.Latency = synth.Q(1, 2, 5)
		if a.canaryMax != nil {
			cw.Latency.Max = a.canaryMax(since)
		}
		r.Data.Windows = append(r.Data.Windows, cw)
		if a.sample != nil {
			inUse, inflight, peak, cancelled := a.sample(since)
			sv := map[string]float64{}
			if !a.noPools {
				for p, v := range inUse {
					sv[rundir.PoolKey(rundata.MetricPoolInUse, p)] = v
				}
			}
			r.Data.Metrics = append(r.Data.Metrics, rundata.MetricSample{Time: ws, Component: rundata.ServiceComponent, Values: sv})
			for _, d := range []string{"A", "B"} {
				pv := map[string]float64{rundata.MetricProxyInflight: inflight[d], rundata.MetricProxyCancelled: cancelled[d]}
				if peak != nil {
					pv[rundata.MetricProxyInflightPeak] = peak[d]
				}
				r.Data.Metrics = append(r.Data.Metrics, rundata.MetricSample{Time: ws.Add(time.Millisecond), Component: rundata.ProxyComponent(d), Values: pv})
			}
		}
	}
	for _, ep := range []string{"a", "b"} {
		r.Data.Phases = append(r.Data.Phases, *base[ep])
	}
	for at := fe.Add(rec); at.Before(fe.Add(rec + a.quiet)); at = at.Add(synth.T) {
		inUse, inflight, _, _ := a.sample(at.Sub(fe).Seconds())
		sv := map[string]float64{}
		for p, v := range inUse {
			sv[rundir.PoolKey(rundata.MetricPoolInUse, p)] = v
		}
		r.Data.Metrics = append(r.Data.Metrics, rundata.MetricSample{Time: at, Component: rundata.ServiceComponent, Values: sv})
		for _, d := range []string{"A", "B"} {
			r.Data.Metrics = append(r.Data.Metrics, rundata.MetricSample{Time: at.Add(time.Millisecond), Component: rundata.ProxyComponent(d),
				Values: map[string]float64{rundata.MetricProxyInflight: inflight[d]}})
		}
	}
	if a.hang {
		r.Data.Meta.Faults = []rundata.FaultEvent{{Time: fe.Add(-10 * time.Second), Dependency: "A", Action: rundata.FaultSet, Faults: []byte(`[{"type":"hang","percent":100}]`)},
			{Time: fe, Dependency: "A", Action: rundata.FaultClear}}
	}
	return r
}

// drained is a correct service after a slow fault: /a's first recovery
// window still sees the queue drain, then everything is back.
func drained(ep string, t float64) (float64, rundata.Class, float64) {
	switch {
	case t >= 0 && t < 0.25 && ep == "a":
		return 0.3, rundata.ClassRejected, 240
	case t < 0 && t > -10 && ep == "a":
		return 0.8, rundata.ClassRejected, 240
	}
	return 0, rundata.ClassRejected, 15
}

func TestRecovery(t *testing.T) {
	ex := rundata.DefaultExpectations()
	dead := func(ep string, t float64) (float64, rundata.Class, float64) {
		if ep == "a" && t > -10 {
			return 1, rundata.ClassRejected, 12 // a leaked bulkhead: everything rejected, fast
		}
		return 0, rundata.ClassRejected, 15
	}
	relapse := func(ep string, t float64) (float64, rundata.Class, float64) {
		if ep == "b" && t >= 4.5 {
			return 0, rundata.ClassRejected, 140 // slow again at the end
		}
		return drained(ep, t)
	}
	slowBack := func(ep string, t float64) (float64, rundata.Class, float64) {
		if ep == "a" && t > -10 && t < 1.5 {
			return 1, rundata.ClassRejected, 12 // a breaker open for 6 T
		}
		return 0, rundata.ClassRejected, 15
	}
	for _, tt := range []struct {
		name              string
		run               amRun
		judged, recovered bool
		timeT             float64 // when recovered
		evidence          string  // in the failing endpoint's String
	}{
		{"drained after one window", amRun{win: drained}, true, true, 1, ""},
		{"a leaked bulkhead never comes back", amRun{win: dead}, true, false, 0, "/a did not recover: at the end p99 12 ms"},
		{"recovery phase too short to tell", amRun{win: drained, recovery: time.Second}, false, false, 0, ""},
		{"but long enough to see it never came back", amRun{win: dead, recovery: 2 * time.Second}, true, false, 0, "100 % errors"},
		{"relapse at the end", amRun{win: relapse}, true, false, 0, "/b did not recover"},
		{"relapse while the canary was slow: the machine", amRun{win: relapse, canaryMax: func(t float64) time.Duration {
			if t >= 4.5 {
				return 90 * time.Millisecond
			}
			return 2 * time.Millisecond
		}}, false, false, 0, ""},
		{"a leaked bulkhead while the canary was slow: still the service's", amRun{win: dead, canaryMax: func(float64) time.Duration {
			return 90 * time.Millisecond
		}}, true, false, 0, "100 % errors"},
		{"a relapse far beyond what the canary's delay could add: the service's", amRun{win: func(ep string, t float64) (float64, rundata.Class, float64) {
			if ep == "b" && t >= 4.5 {
				return 0, rundata.ClassRejected, 240
			}
			return drained(ep, t)
		}, canaryMax: func(t float64) time.Duration {
			if t >= 4.5 {
				return 13 * time.Millisecond
			}
			return 2 * time.Millisecond
		}}, true, false, 0, "/b did not recover"},
		{"a breaker's delay beyond the bound", amRun{win: slowBack}, true, false, 0, "within the bound (back after 6 T)"},
		{"a breaker's delay within its allowance", amRun{win: slowBack, allowance: 2 * time.Second}, true, true, 6, ""},
		{"errors as in the baseline are the baseline", amRun{win: func(ep string, t float64) (float64, rundata.Class, float64) {
			return 0.6, rundata.ClassRejected, 15 // a bulkhead too small for healthy traffic, before and after
		}}, true, true, 0, ""},
		{"errors more than a point above the baseline's are not", amRun{win: func(ep string, t float64) (float64, rundata.Class, float64) {
			if t >= 0 {
				return 0.62, rundata.ClassRejected, 15
			}
			return 0.6, rundata.ClassRejected, 15
		}}, true, false, 0, "62 % errors"},
	} {
		r := tt.run.build()
		rec := r.Recovery(ex)
		if rec == nil {
			t.Fatalf("%s: no recovery judged", tt.name)
		}
		if rec.Judged != tt.judged || (rec.Judged && rec.Recovered != tt.recovered) {
			t.Errorf("%s: judged %t recovered %t, want %t %t (%+v)", tt.name, rec.Judged, rec.Recovered, tt.judged, tt.recovered, rec.Endpoints)
			continue
		}
		if tt.recovered && float64(rec.TimeT) != tt.timeT {
			t.Errorf("%s: time to recover %v T, want %v", tt.name, rec.TimeT, tt.timeT)
		}
		if tt.evidence != "" {
			var all []string
			for _, e := range rec.Endpoints {
				all = append(all, e.String())
			}
			if s := strings.Join(all, "; "); !strings.Contains(s, tt.evidence) {
				t.Errorf("%s: %q, want it to contain %q", tt.name, s, tt.evidence)
			}
		}
	}
	if (amRun{win: drained}).build().Recovery(ex) == nil {
		t.Fatal("no recovery")
	}
	noFault := amRun{win: drained}.build()
	noFault.Data.Meta.Phases = noFault.Data.Meta.Phases[:2]
	if noFault.Recovery(ex) != nil {
		t.Error("a run without a fault and a recovery phase was judged")
	}
}

// wobble is ±1 a sample around x, as two scrapes a moment apart see it.
func wobble(t, x float64) float64 { return x + float64(int(t*4)%3-1) }

// lateUnderLoad is a correct pool on a loaded machine: after the fault
// one permit more in use than calls in flight while the load runs (its
// recovery phase, 5 s), none once it stopped.
func lateUnderLoad(t float64) (map[string]float64, map[string]float64, map[string]float64, map[string]float64) {
	late := 0.0
	if t > 0 && t <= 5 {
		late = 1
	}
	return map[string]float64{"a": 2 + late, "b": 2}, map[string]float64{"A": 2, "B": 2}, nil, map[string]float64{}
}

func TestLeaks(t *testing.T) {
	flows := func(leak float64) func(t float64) (map[string]float64, map[string]float64, map[string]float64, map[string]float64) {
		return func(t float64) (map[string]float64, map[string]float64, map[string]float64, map[string]float64) {
			inA, inB := 2.0, 2.0
			if t < 0 && t > -10 {
				inA = 10
			}
			held := 0.0
			if t > -9 {
				held = leak // lost during the fault
			}
			return map[string]float64{"a": inA + held + math.Max(0, wobble(t, 0)), "b": inB + math.Max(0, wobble(t+1, 0))},
				map[string]float64{"A": inA, "B": inB}, nil, map[string]float64{}
		}
	}
	for _, tt := range []struct {
		name   string
		run    amRun
		leaked int
		judged bool
		says   string
	}{
		{"every permit back", amRun{win: drained, sample: flows(0)}, 0, true, ""},
		{"every permit of a leaked", amRun{win: drained, sample: flows(10)}, 10, true, "pool a: 12 in use, 2 calls to A in flight"},
		{"a few permits lost", amRun{win: drained, sample: flows(3)}, 3, true, "3 permits leaked"},
		{"a few permits lost, and still once the load stopped", amRun{win: drained, sample: flows(3), quiet: 3 * time.Second}, 3, true, "3 permits leaked"},
		// A machine so loaded that the service's calls spend long between
		// taking a permit and reaching the proxy: under the recovery's load
		// one permit more is in use than calls in flight at every sample,
		// improbably so by the (quieter) baseline. Without the quiet
		// service's samples that reads as a leak; with them, it is none.
		{"late calls under load, not recorded quiet", amRun{win: drained, sample: lateUnderLoad}, 1, true, "1 permit leaked"},
		{"late calls under load, none held once quiet", amRun{win: drained, sample: lateUnderLoad, quiet: 3 * time.Second}, 0, true, "none leaked"},
		{"no pool metrics: rejected while nothing is in flight", amRun{noPools: true, win: func(ep string, t float64) (float64, rundata.Class, float64) {
			if ep == "a" && t > -10 {
				return 1, rundata.ClassRejected, 12
			}
			return 0, rundata.ClassRejected, 15
		}, sample: func(t float64) (map[string]float64, map[string]float64, map[string]float64, map[string]float64) {
			a := 0.0
			if t < 0 && t > -10 {
				a = 10 // the cap the fault phase shows, before every permit was gone
			}
			return nil, map[string]float64{"A": a, "B": 2}, nil, nil
		}}, 10, false, "calls to A: 0 in flight while their callers were rejected, limit 10"},
		// A service that recovers slowly but fully: rejections go on for
		// 2 s after the fault with nothing in flight, then stop: its
		// permits came back, no leak.
		{"no pool metrics: rejected for a while, then back", amRun{noPools: true, win: func(ep string, t float64) (float64, rundata.Class, float64) {
			if ep == "a" && t > -10 && t < 2 {
				return 1, rundata.ClassRejected, 12
			}
			return 0, rundata.ClassRejected, 15
		}, sample: func(t float64) (map[string]float64, map[string]float64, map[string]float64, map[string]float64) {
			a := 0.0
			if t < 0 && t > -10 {
				a = 10
			}
			return nil, map[string]float64{"A": a, "B": 2}, nil, nil
		}}, 0, false, ""},
		{"no pool metrics, probes before and after", amRun{noPools: true, probes: true, win: drained,
			sample: func(t float64) (map[string]float64, map[string]float64, map[string]float64, map[string]float64) {
				peak := map[string]float64{"A": 2, "B": 2}
				switch {
				case t > -16.5 && t < -15.25: // the probe before
					peak = map[string]float64{"A": 10, "B": 10}
				case t > 5 && t < 6.25: // the probe after
					peak = map[string]float64{"A": 6, "B": 10}
				}
				return nil, map[string]float64{"A": 2, "B": 2}, peak, nil
			}}, 4, true, "calls to A capped at 10 before the fault, 6 after → 4 permits lost"},
	} {
		r := tt.run.build()
		var inferred []InferredLimit
		if tt.run.noPools {
			inferred = []InferredLimit{{Dependencies: []string{"A"}, Limit: 10}}
		}
		l := leakScan{r.Data}.leaks(inferred)
		if l == nil {
			t.Fatalf("%s: nothing judged", tt.name)
		}
		var says []string
		for _, p := range l.Pools {
			says = append(says, p.String())
		}
		if l.Leaked != tt.leaked || l.Judged != tt.judged || !strings.Contains(strings.Join(says, "; "), tt.says) {
			t.Errorf("%s: leaked %d judged %t (%s), want %d %t and %q", tt.name, l.Leaked, l.Judged, strings.Join(says, "; "), tt.leaked, tt.judged, tt.says)
		}
	}
}

func TestLimitChecks(t *testing.T) {
	// peaks puts a peak of a calls to A (cancelledA of them abandoned) in the
	// sample interval ending at seconds from the fault's end.
	peaks := func(a, cancelledA, at float64) func(t float64) (map[string]float64, map[string]float64, map[string]float64, map[string]float64) {
		return func(t float64) (map[string]float64, map[string]float64, map[string]float64, map[string]float64) {
			p, c := 3.0, 0.0
			if t > at-0.25 && t <= at {
				p, c = a, cancelledA
			}
			if t > at {
				c = cancelledA
			}
			return map[string]float64{"a": 2, "b": 2}, map[string]float64{"A": 2, "B": 2}, map[string]float64{"A": p, "B": 4}, map[string]float64{"A": c}
		}
	}
	for _, tt := range []struct {
		name  string
		run   amRun
		holds bool
		says  string
	}{
		{"at the limit", amRun{sample: peaks(10, 0, 2.25)}, true, "at most 10 calls to A in flight, limit 10 (declared): holds"},
		{"over it", amRun{sample: peaks(14, 0, 2.25)}, false, "14 calls to A in flight (recovery, 19.3 s), limit 10 (declared): the limit does not hold"},
		{"over it by calls the service had abandoned", amRun{sample: peaks(11, 1, 2.25)}, true, "holds"},
		{"a shared pool's limit is each dependency's", amRun{shared: true, sample: peaks(14, 0, 2.25)}, true, "limit 20"},
		{"not judged while a hang holds calls to T", amRun{hang: true, sample: peaks(14, 0, -1)}, true, "holds"},
		{"judged again once the hang's calls are gone", amRun{hang: true, sample: peaks(14, 0, 2.25)}, false, "the limit does not hold"},
	} {
		r := tt.run.build()
		cs := limitChecker{r.Data}.limitChecks(nil)
		var a *LimitCheck
		for i := range cs {
			if cs[i].Dependency == "A" {
				a = &cs[i]
			}
		}
		if a == nil {
			t.Fatalf("%s: A not checked: %+v", tt.name, cs)
		}
		if a.Holds != tt.holds || !strings.Contains(a.String(), tt.says) {
			t.Errorf("%s: %s, want holds %t and %q", tt.name, a, tt.holds, tt.says)
		}
	}
}

// TestLeakedPoolIsNamed: a pool that ran out of the permits it had lost is
// named so as the exhausted resource.
func TestLeakedPoolIsNamed(t *testing.T) {
	e := Exhaustion{Resource: ResourcePool, Ranked: []ResourceHit{{Resource: ResourcePool, Name: "a", Detail: "pool a: in_use 10/10"}}}
	e.markLeaked(&RunLeaks{Judged: true, Leaked: 10, Pools: []PoolLeak{{Pool: "a", Source: LeakFromMetrics, Leaked: 10}}})
	if got := e.Label(); got != "pool a (leaked)" || !strings.Contains(e.Detail, "10 of its permits were never given back") {
		t.Errorf("label %q detail %q", got, e.Detail)
	}
	e = Exhaustion{Resource: ResourcePool, Ranked: []ResourceHit{{Resource: ResourcePool, Name: "b"}}}
	e.markLeaked(&RunLeaks{Judged: true, Leaked: 10, Pools: []PoolLeak{{Pool: "a", Source: LeakFromMetrics, Leaked: 10}}})
	if got := e.Label(); got != "pool b" {
		t.Errorf("a pool that did not leak: %q", got)
	}
}

// TestLimitChecksOfASharedLimit: a service whose only limit is one agent of
// 10 connections shared by A and B (no worker pools): the slow A holds 8 in
// the fault phase and B gets 2, B alone had 4 in the warm-up. Only limits
// that exist are judged — the exported pool's own count, the proxies' sum
// under a pool whose name tells its dependencies, a ceiling inferred on
// A+B in the phase it was seen — never B's share of 2; a sum that really
// went over the exported limit is a certain violation, over an inferred
// one only a doubt.
func TestLimitChecksOfASharedLimit(t *testing.T) {
	sample := func(over float64) func(t float64) (map[string]float64, map[string]float64, map[string]float64, map[string]float64) {
		return func(t float64) (map[string]float64, map[string]float64, map[string]float64, map[string]float64) {
			a, b := 1.0, 4.0 // before the fault: B busier than A, 5 in all
			if t >= -10 && t < 0 {
				a, b = 8, 2
			}
			if t > 2 && t <= 2.25 {
				a += over // a burst after the fault
			}
			return nil, map[string]float64{"A": a, "B": b}, nil, nil
		}
	}
	for _, tt := range []struct {
		name     string
		pool     string  // the exported connection pool's name; "" none
		over     float64 // calls over the limit in the burst
		inferred []InferredLimit
		want     []string // every check's String, in order
	}{
		{"exported pool of a name that tells nothing", "agent", 0, []InferredLimit{{Dependencies: []string{"A", "B"}, Limit: 10}},
			[]string{"at most 10 in use in pool agent, limit 10 (connections): holds", "at most 10 calls to A+B in flight, limit 11 (inferred): holds"}},
		{"the built-in shared pool: its dependencies' sum", "shared", 0, nil,
			[]string{"at most 10 calls to A+B in flight, limit 10 (connections): holds", "at most 10 in use in pool shared, limit 10 (connections): holds"}},
		{"the sum over the exported limit", "shared", 8, nil,
			[]string{"13 calls to A+B in flight (recovery, 19.3 s), limit 10 (connections): the limit does not hold — a sum over several proxies, each sampled at its own moment, can count a call that moved between them: the pool's own count decides",
				"at most 10 in use in pool shared, limit 10 (connections): holds"}},
		{"the sum one over the exported limit: the proxies' sampling", "shared", 6, nil,
			[]string{"at most 11 calls to A+B in flight, limit 10 (connections): holds", "at most 10 in use in pool shared, limit 10 (connections): holds"}},
		{"no metrics: the inferred shared limit alone", "", 0, []InferredLimit{{Dependencies: []string{"A", "B"}, Limit: 10}},
			[]string{"at most 10 calls to A+B in flight, limit 11 (inferred): holds"}},
	} {
		r := amRun{noPools: true, sample: sample(tt.over)}.build()
		r.Data.Meta.Pools = nil
		for i := range r.Data.Meta.Endpoints {
			r.Data.Meta.Endpoints[i].Pool = ""
		}
		if tt.pool != "" {
			for i, s := range r.Data.Metrics {
				if s.Component == rundata.ServiceComponent {
					a, _ := rundir.ValueAt(r.Data.Metric(rundata.ProxyComponent("A"), rundata.MetricProxyInflight), s.Time.Add(time.Millisecond))
					b, _ := rundir.ValueAt(r.Data.Metric(rundata.ProxyComponent("B"), rundata.MetricProxyInflight), s.Time.Add(time.Millisecond))
					r.Data.Metrics[i].Values[rundir.PoolKey(rundata.MetricConnPoolLimit, tt.pool)] = 10
					r.Data.Metrics[i].Values[rundir.PoolKey(rundata.MetricConnPoolInUse, tt.pool)] = min(a+b, 10)
				}
			}
		}
		var got []string
		for _, c := range (limitChecker{r.Data}).limitChecks(tt.inferred) {
			got = append(got, c.String())
			if strings.Contains(c.Dependency, "B") && !strings.Contains(c.Dependency, "+") {
				t.Errorf("%s: B judged on its own: %s", tt.name, c)
			}
		}
		if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("%s: checks\n%s\nwant\n%s", tt.name, strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
		}
	}
	r := amRun{noPools: true, sample: sample(0)}.build()
	r.Data.Meta.Pools = nil
	for i := range r.Data.Meta.Endpoints {
		r.Data.Meta.Endpoints[i].Pool = ""
	}
	// An inferred limit passed in the fault phase is only a doubt.
	cs := limitChecker{r.Data}.limitChecks([]InferredLimit{{Dependencies: []string{"A", "B"}, Limit: 7}})
	if len(cs) != 1 || cs[0].Holds || cs[0].Certain() || cs[0].Doubt == "" {
		t.Errorf("inferred limit of 7 under a sum of 10: %+v, want a violation with a doubt", cs)
	}
}
