package measure

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// inflightRun is a run whose proxies report in-flight counts a(i), b(i) at
// 40 samples over a 10 s fault phase.
func inflightRun(a, b func(i int) float64) *Run {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &rundir.Run{Meta: rundata.RunMeta{
		Endpoints: []rundata.EndpointInfo{{Name: "a", Dependency: "A"}, {Name: "b", Dependency: "B"}},
		Phases:    []rundata.PhaseSpan{{Name: rundata.PhaseFault, Start: start, End: start.Add(10 * time.Second)}},
	}}
	for i := range 40 {
		t := start.Add(time.Duration(i)*250*time.Millisecond + time.Millisecond)
		r.Metrics = append(r.Metrics,
			rundata.MetricSample{Time: t, Component: "proxy-A", Values: map[string]float64{rundata.MetricProxyInflight: a(i)}},
			rundata.MetricSample{Time: t, Component: "proxy-B", Values: map[string]float64{rundata.MetricProxyInflight: b(i)}})
	}
	return &Run{Data: r}
}

// TestInferLimits: a shared pool of 20 shows as one cap on A+B, bulkheads of
// 10 as a cap on A alone; an unlimited service, or a cap that nobody ran
// into, shows none.
func TestInferLimits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	noise := func(lo, hi int) func(int) float64 {
		return func(int) float64 { return float64(lo + rng.IntN(hi-lo+1)) }
	}
	ramp := func(top float64) func(int) float64 { // fills in 1 s, then sits at top (a permit free now and then)
		return func(i int) float64 {
			switch {
			case i < 4:
				return top * float64(i) / 4
			case i%7 == 0:
				return top - 1
			}
			return top
		}
	}
	shared := func(i int) float64 { // A takes what B does not hold: the sum is 20
		if i < 4 {
			return 5 * float64(i)
		}
		return 20 - float64(i%3)
	}
	sharedB := func(i int) float64 {
		if i < 4 {
			return 0
		}
		return float64(i % 3)
	}
	for _, tt := range []struct {
		name   string
		a, b   func(int) float64
		errors map[string]float64
		want   string
	}{
		{"shared pool of 20", shared, sharedB, map[string]float64{"a": 0.6, "b": 0.6}, "calls to A+B capped at 20 → one shared limit"},
		{"bulkheads of 10", ramp(10), noise(0, 4), map[string]float64{"a": 0.5, "b": 0}, "calls to A capped at 10"},
		// As measured: B's count nearly constant, so the sum sits at 12 ± 1.
		{"bulkheads of 10, B steady", ramp(10), func(i int) float64 { return float64(2 + i%11/10) }, map[string]float64{"a": 0.5, "b": 0}, "calls to A capped at 10"},
		{"A alone at the cap, B idle and fine", ramp(20), func(int) float64 { return 0 }, map[string]float64{"a": 0.5, "b": 0}, "calls to A capped at 20"},
		// One agent of 10 sockets: slow A holds about 8, B gets what is left
		// (1–3); the two proxies are sampled a moment apart, so the sum is
		// 10 ± 1, flatter than the parts added up: one limit, not "A capped
		// at 8" and "B capped at 2".
		{"one shared limit of 10, A holding 8", func(i int) float64 { return float64(10 - (1 + i%3) + (i%12)/11) },
			func(i int) float64 { return float64(1 + i%3) }, map[string]float64{"a": 0.6, "b": 0.3}, "calls to A+B capped at 10 → one shared limit"},
		// The same agent where B's callers only waited for a socket (slower,
		// not failing): the counts still move against each other.
		{"one shared limit of 10, B only waiting", func(i int) float64 { return float64(10 - (1 + i%3) + (i%12)/11) },
			func(i int) float64 { return float64(1 + i%3) }, map[string]float64{"a": 0.6, "b": 0}, "calls to A+B capped at 10 → one shared limit"},
		// As measured (the built-in service with one pool of 10
		// connections, a slow A): the sum sits at 10 but for two moments
		// between calls, A and B take turns.
		{"one shared limit of 10, as measured", func(i int) float64 { return []float64{8, 9, 9, 8, 9, 9, 8, 9, 9, 9}[i%10] },
			func(i int) float64 { return []float64{1, 1, 1, 2, 1, 1, 1, 1, 1, 1}[i%10] }, map[string]float64{"a": 0.85, "b": 0}, "calls to A+B capped at 10 → one shared limit"},
		// Two bulkheads of 10, both full and failing: each is flat on its
		// own and the sum varies as much as both together.
		{"two full bulkheads of 10", ramp(10), func(i int) float64 {
			if i%5 == 0 {
				return 9
			}
			return 10
		}, map[string]float64{"a": 0.5, "b": 0.5}, "calls to A capped at 10; calls to B capped at 10"},
		// Measured in CI: a bulkhead of 4 on A, B's few calls behind their
		// own, fine and at baseline; B's count happened to move against A's
		// dips, so the sum sat flat — yet nothing held B's callers back: no
		// shared limit.
		{"a bulkhead of 4, B's count against A's by chance", func(i int) float64 { return float64(4 - btoi(i%4 == 0)) },
			func(i int) float64 { return float64(2 + btoi(i%4 == 0)) }, map[string]float64{"a": 0.6, "b": 0}, "calls to A capped at 4"},
		{"no limit: in flight varies", noise(30, 60), noise(0, 4), map[string]float64{"a": 0, "b": 0}, ""},
		{"a plateau but nothing failed", ramp(45), noise(0, 4), map[string]float64{"a": 0, "b": 0}, ""},
	} {
		// B's callers only waited for a socket: their p99 rose, no error.
		slowed := map[string]map[string]bool{"one shared limit of 10, B only waiting": {"b": true}, "one shared limit of 10, as measured": {"b": true}}[tt.name]
		got := DescribeInferred(inferLimits(inflightRun(tt.a, tt.b).Data, tt.errors, slowed))
		if got != tt.want {
			t.Errorf("%s: inferred %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestProxyPrediction: holding times measured by the proxies in the
// baseline (in flight / rate: 2 / 200/s = 10 ms) predict the demand of a
// user's pool, and a 225 ms latency fault raises it in the fault phase,
// capped at T.
func TestProxyPrediction(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	base := rundata.PhaseSpan{Name: rundata.PhaseBaseline, Start: start, End: start.Add(5 * time.Second)}
	fault := rundata.PhaseSpan{Name: rundata.PhaseFault, Start: base.End, End: base.End.Add(10 * time.Second)}
	r := &Run{Data: &rundir.Run{Meta: rundata.RunMeta{External: true, Timeout: 250 * time.Millisecond,
		Endpoints: []rundata.EndpointInfo{{Name: "a", Dependency: "A"}, {Name: "b", Dependency: "B"}},
		Phases:    []rundata.PhaseSpan{base, fault},
		Faults: []rundata.FaultEvent{{Time: fault.Start, Dependency: "A", Action: "set",
			Faults: []byte(`[{"type":"latency","percent":100,"latency":"225ms","jitter":"10ms"}]`)}}}}}
	r.atRate(200, base, fault)
	for i := range 60 {
		at := start.Add(time.Duration(i) * 250 * time.Millisecond)
		for _, d := range []string{"A", "B"} {
			r.Data.Metrics = append(r.Data.Metrics, rundata.MetricSample{Time: at, Component: "proxy-" + d, Values: map[string]float64{
				rundata.MetricProxyInflight: 2, rundata.MetricProxyRequests: 50 * float64(i)}})
		}
	}
	pred, ok := proxyLatency{r.Data}.proxyPrediction([]string{"a", "b"})
	if !ok {
		t.Fatal("no prediction")
	}
	// Baseline: 2 × 200/s × 10 ms = 4; fault: 200/s × min(235 ms, 250 ms) + 200/s × 10 ms = 49.
	if got := pred[rundata.PhaseBaseline]; math.Abs(got-4) > 0.2 {
		t.Errorf("baseline demand %.2f, want 4", got)
	}
	if got := pred[rundata.PhaseFault]; math.Abs(got-49) > 1 {
		t.Errorf("fault demand %.2f, want 49", got)
	}
	r.Data.Metrics = nil
	if _, ok := (proxyLatency{r.Data}).proxyPrediction([]string{"a"}); ok {
		t.Error("a prediction without proxy samples")
	}
}

// TestInferNoLimitAtDemand: a service without a limit whose calls to a slow
// A all take T sits flat at rate × T in flight while /a fails; the proxies'
// own prediction of that demand tells it from a cap.
func TestInferNoLimitAtDemand(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	base := rundata.PhaseSpan{Name: rundata.PhaseBaseline, Start: start, End: start.Add(5 * time.Second)}
	fault := rundata.PhaseSpan{Name: rundata.PhaseFault, Start: base.End, End: base.End.Add(10 * time.Second)}
	run := func(level float64) string {
		r := &Run{Data: &rundir.Run{Meta: rundata.RunMeta{External: true, Timeout: 250 * time.Millisecond,
			Endpoints: []rundata.EndpointInfo{{Name: "a", Dependency: "A"}, {Name: "b", Dependency: "B"}},
			Phases:    []rundata.PhaseSpan{base, fault},
			Faults: []rundata.FaultEvent{{Time: fault.Start, Dependency: "A", Action: "set",
				Faults: []byte(`[{"type":"latency","percent":100,"latency":"300ms"}]`)}}}}}
		for _, ep := range []string{"a", "b"} {
			for _, ph := range []rundata.PhaseSpan{base, fault} {
				r.Data.Phases = append(r.Data.Phases, rundata.PhaseStats{Endpoint: ep, Phase: ph.Name, TargetRate: 200})
			}
		}
		for i := range 60 {
			at := start.Add(time.Duration(i)*250*time.Millisecond + time.Millisecond)
			a := 2.0
			if at.After(fault.Start.Add(300 * time.Millisecond)) {
				a = level
			}
			r.Data.Metrics = append(r.Data.Metrics,
				rundata.MetricSample{Time: at, Component: "proxy-A", Values: map[string]float64{rundata.MetricProxyInflight: a, rundata.MetricProxyRequests: 50 * float64(i)}},
				rundata.MetricSample{Time: at, Component: "proxy-B", Values: map[string]float64{rundata.MetricProxyInflight: float64(1 + i%3), rundata.MetricProxyRequests: 50 * float64(i)}})
		}
		return DescribeInferred(inferLimits(r.Data, map[string]float64{"a": 0.9, "b": 0}, nil))
	}
	// Demand: 200/s × min(10 ms + 300 ms, 250 ms) = 50 permits.
	if got := run(50); got != "" {
		t.Errorf("flat at the demand (no limit): inferred %q, want none", got)
	}
	if got := run(20); got != "calls to A capped at 20" {
		t.Errorf("flat at 20 against a demand of 50: inferred %q, want A capped at 20", got)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestProxyPredictionMatch: a fault with a match acts on the share of an
// endpoint's calls that match it. /a and /b both call DB (2 in flight at
// 400 calls/s: 5 ms each); a 225 ms latency fault matches the report
// class, which the calibration measured /a alone to call. With the call
// graph, /b's demand stays at its baseline's and /a takes the fault;
// without it, each is charged the share of DB's calls of the class in the
// baseline (a half; the proxy's class counter); with a match the proxy
// did not count, every call (the old charge). The same for a PostgreSQL
// dependency's statement class (faultproxy_pg_class_queries_total) and
// an HTTP one's route class (faultproxy_class_requests_total).
func TestProxyPredictionMatch(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	base := rundata.PhaseSpan{Name: rundata.PhaseBaseline, Start: start, End: start.Add(5 * time.Second)}
	fault := rundata.PhaseSpan{Name: rundata.PhaseFault, Start: base.End, End: base.End.Add(10 * time.Second)}
	for _, plane := range []struct{ metric, report, other string }{
		{rundata.MetricPgClassQueries, "report_", "lookup"},
		{rundata.MetricClassRequests, "GET ^/reports/", "^/lookup"},
	} {
		run := func(match string, g *rundata.CallGraph) *Run {
			r := &Run{Data: &rundir.Run{CallGraph: g, Meta: rundata.RunMeta{External: true, Timeout: 250 * time.Millisecond,
				Endpoints:   []rundata.EndpointInfo{{Name: "a", Dependency: "DB"}, {Name: "b", Dependency: "DB"}},
				Phases:      []rundata.PhaseSpan{base, fault},
				CallClasses: map[string][]rundata.CallClass{"DB": {{Name: "report", Match: plane.report}}},
				Faults: []rundata.FaultEvent{{Time: fault.Start, Dependency: "DB", Action: "set",
					Faults: []byte(`[{"type":"latency","percent":100,"latency":"225ms","match":"` + match + `"}]`)}}}}}
			r.atRate(200, base, fault)
			for i := range 60 {
				at := start.Add(time.Duration(i) * 250 * time.Millisecond)
				r.Data.Metrics = append(r.Data.Metrics, rundata.MetricSample{Time: at, Component: "proxy-DB", Values: map[string]float64{
					rundata.MetricProxyInflight: 2, rundata.MetricProxyRequests: 100 * float64(i),
					rundata.Key(plane.metric, rundata.L("class", "report")): 50 * float64(i)}})
			}
			return r
		}
		graph := &rundata.CallGraph{Requests: 10, Rate: 10, Edges: map[string][]string{"a": {"DB"}, "b": {"DB"}}, Endpoints: []rundata.EndpointCalls{
			{Endpoint: "a", OK: 10, Calls: map[string]float64{"DB": 1}, Classes: map[string]map[string]float64{"DB": {"report": 1}}},
			{Endpoint: "b", OK: 10, Calls: map[string]float64{"DB": 1}, Classes: map[string]map[string]float64{"DB": {"report": 0}}}}}
		for _, tt := range []struct {
			name  string
			match string
			g     *rundata.CallGraph
			a, b  float64 // fault-phase demand
		}{
			{"measured per endpoint", plane.report, graph, 200 * 0.23, 200 * 0.005},
			{"the baseline's share", plane.report, nil, 200 * (0.005 + 0.225/2), 200 * (0.005 + 0.225/2)},
			{"a match not counted", plane.other, graph, 200 * 0.23, 200 * 0.23},
		} {
			r := run(tt.match, tt.g)
			for ep, want := range map[string]float64{"a": tt.a, "b": tt.b} {
				pred, ok := proxyLatency{r.Data}.proxyPrediction([]string{ep})
				if got := pred[rundata.PhaseFault]; !ok || math.Abs(got-want) > 0.5 {
					t.Errorf("%s, %s: /%s's fault-phase demand %.2f (%v), want %.2f", plane.metric, tt.name, ep, got, ok, want)
				}
			}
			if tt.g != nil && tt.match == plane.report {
				if d, ok := (callGraph{r.Data}).demandOn([]string{"DB"}); !ok || math.Abs(d[rundata.PhaseFault]-(tt.a+tt.b)) > 0.5 {
					t.Errorf("%s, %s: DB's fault-phase demand %.2f (%v), want %.2f", plane.metric, tt.name, d[rundata.PhaseFault], ok, tt.a+tt.b)
				}
			}
		}
	}
}

// atRate gives every endpoint of r's metadata the target rate in each of
// the phases.
func (r *Run) atRate(rate float64, phases ...rundata.PhaseSpan) {
	for _, e := range r.Data.Meta.Endpoints {
		for _, ph := range phases {
			r.Data.Phases = append(r.Data.Phases, rundata.PhaseStats{Endpoint: e.Name, Phase: ph.Name, TargetRate: rate})
		}
	}
}
