package measure

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// graphRun is a run of a user's service (T = 250 ms) with a 5 s baseline
// and a 10 s fault phase during which fault is set on faulted: its
// endpoints at rates, each proxy sampled every 250 ms — in the baseline
// baseInflight[d] calls in flight at reqRate[d] requests per second (a
// holding time of their ratio), in the fault phase fault[d](i) at the i-th
// sample.
func graphRun(eps []rundata.EndpointInfo, rates map[string]float64, faulted, fault string,
	baseInflight, reqRate map[string]float64, inFault map[string]func(int) float64) *Run {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	base := rundata.PhaseSpan{Name: rundata.PhaseBaseline, Start: start, End: start.Add(5 * time.Second)}
	fp := rundata.PhaseSpan{Name: rundata.PhaseFault, Start: base.End, End: base.End.Add(10 * time.Second)}
	r := &Run{Data: &rundir.Run{Meta: rundata.RunMeta{External: true, Timeout: 250 * time.Millisecond, Endpoints: eps,
		Phases: []rundata.PhaseSpan{base, fp},
		Faults: []rundata.FaultEvent{{Time: fp.Start, Dependency: faulted, Action: rundata.FaultSet, Faults: []byte(fault)}}}}}
	for _, e := range eps {
		for _, ph := range []rundata.PhaseSpan{base, fp} {
			r.Data.Phases = append(r.Data.Phases, rundata.PhaseStats{Endpoint: e.Name, Phase: ph.Name, TargetRate: rates[e.Name]})
		}
	}
	for i := range 60 {
		at := start.Add(time.Duration(i)*250*time.Millisecond + time.Millisecond)
		for d, rate := range reqRate {
			v := baseInflight[d]
			if k := i - 20; k >= 0 {
				v = inFault[d](k)
			}
			r.Data.Metrics = append(r.Data.Metrics, rundata.MetricSample{Time: at, Component: rundata.ProxyComponent(d),
				Values: map[string]float64{rundata.MetricProxyInflight: v, rundata.MetricProxyRequests: rate * 0.25 * float64(i)}})
		}
	}
	return r
}

// TestInferFromMeasuredGraph: the expected demand on a dependency counts
// every endpoint that calls it by the audit's measured call graph (or by
// audit.calls), not only the one that declares it. /price (40/s) declares
// PRICING; /cart (40/s) declares CART but calls PRICING too. Slowed to
// 225 ms, PRICING's calls sit flat at 13 while /price fails: /price alone
// would demand 9.4 calls in flight, so 13 could be demand; with /cart
// 18.8, so 13 is a cap. A level at that demand (18) stays no cap.
func TestInferFromMeasuredGraph(t *testing.T) {
	eps := []rundata.EndpointInfo{{Name: "price", Dependency: "PRICING"}, {Name: "cart", Dependency: "CART"}}
	rates := map[string]float64{"price": 40, "cart": 40}
	slow := `[{"type":"latency","percent":100,"latency":"225ms","jitter":"10ms"}]`
	run := func(level float64) *Run {
		// PRICING: 80 calls/s at 10 ms (0.8 in flight); CART: 40/s at 10 ms.
		return graphRun(eps, rates, "PRICING", slow, map[string]float64{"PRICING": 0.8, "CART": 0.4}, map[string]float64{"PRICING": 80, "CART": 40},
			map[string]func(int) float64{"PRICING": func(i int) float64 { return level - float64(btoi(i%6 == 0)) }, "CART": func(i int) float64 { return float64(i % 2) }})
	}
	graph := &rundata.CallGraph{Requests: 20, Rate: 20,
		Endpoints: []rundata.EndpointCalls{{Endpoint: "price", OK: 20, Calls: map[string]float64{"PRICING": 1}},
			{Endpoint: "cart", OK: 20, Calls: map[string]float64{"CART": 1, "PRICING": 1}}},
		Edges: map[string][]string{"price": {"PRICING"}, "cart": {"CART", "PRICING"}}}
	errs := map[string]float64{"price": 0.4, "cart": 0.3}
	for _, tt := range []struct {
		name     string
		level    float64
		graph    *rundata.CallGraph
		declared map[string][]string
		want     string
	}{
		{"declared dependencies only", 13, nil, nil, ""},
		{"measured call graph", 13, graph, nil, "calls to PRICING capped at 13"},
		{"audit.calls", 13, nil, map[string][]string{"cart": {"CART", "PRICING"}}, "calls to PRICING capped at 13"},
		{"flat at the demand", 18, graph, nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := run(tt.level)
			r.Data.CallGraph, r.Data.DeclaredCalls = tt.graph, tt.declared
			if got := DescribeInferred(inferLimits(r.Data, errs, nil)); got != tt.want {
				t.Errorf("inferred %q, want %q", got, tt.want)
			}
		})
	}
	r := run(13)
	r.Data.CallGraph = graph
	pred, ok := callGraph{r.Data}.demandOn([]string{"PRICING"})
	if want := 80 * 0.235; !ok || math.Abs(pred[rundata.PhaseFault]-want) > 0.1 {
		t.Errorf("demand on PRICING under the fault %v (%v), want %.1f (/price and /cart, 40/s each × 235 ms)", pred, ok, want)
	}
	if callers := (callGraph{r.Data}).callersOf([]string{"PRICING"}); len(callers) != 2 {
		t.Errorf("callers of PRICING %v, want price and cart", callers)
	}
}

// TestInferSharedSubset: a limit shared by two of three dependencies is
// named over those two — not over all three, and not as a cap of its own
// on either — whether the third is untouched, capped on its own, or under
// the same limit; and nothing is named where no limit held anyone back.
func TestInferSharedSubset(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	noise := func(lo, hi int) func(int) float64 {
		return func(int) float64 { return float64(lo + rng.IntN(hi-lo+1)) }
	}
	turnA := func(total int) func(int) float64 { return func(i int) float64 { return float64(total - 2 - i%3) } }
	turnB := func(i int) float64 { return float64(2 + i%3) }
	eps := []rundata.EndpointInfo{{Name: "a", Dependency: "A"}, {Name: "b", Dependency: "B"}, {Name: "c", Dependency: "C"}}
	for _, tt := range []struct {
		name    string
		a, b, c func(int) float64
		errors  map[string]float64
		want    string
	}{
		{"A+B share 20, C fine", turnA(20), turnB, noise(0, 3), map[string]float64{"a": 0.6, "b": 0.3}, "calls to A+B capped at 20 → one shared limit"},
		{"A+B share 20, C capped at 10 on its own", turnA(20), turnB, func(i int) float64 { return float64(10 - btoi(i%7 == 0)) },
			map[string]float64{"a": 0.6, "b": 0.3, "c": 0.5}, "calls to A+B capped at 20 → one shared limit; calls to C capped at 10"},
		{"A+B+C share 30", turnA(30), func(i int) float64 { return float64(1 + i%2) }, func(i int) float64 { return float64((i+1)%2 + i%3) },
			map[string]float64{"a": 0.6, "b": 0.3, "c": 0.3}, "calls to A+B+C capped at 30 → one shared limit"},
		{"no limit: counts vary, nobody failed", noise(10, 30), noise(0, 4), noise(0, 4), map[string]float64{}, ""},
		{"one bulkhead of 10 on A, B and C fine", func(i int) float64 { return float64(10 - btoi(i%5 == 0)) }, noise(0, 3), noise(0, 3),
			map[string]float64{"a": 0.5}, "calls to A capped at 10"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			r := &rundir.Run{Meta: rundata.RunMeta{Endpoints: eps,
				Phases: []rundata.PhaseSpan{{Name: rundata.PhaseFault, Start: start, End: start.Add(10 * time.Second)}}}}
			for i := range 40 {
				at := start.Add(time.Duration(i)*250*time.Millisecond + time.Millisecond)
				for d, f := range map[string]func(int) float64{"A": tt.a, "B": tt.b, "C": tt.c} {
					r.Metrics = append(r.Metrics, rundata.MetricSample{Time: at, Component: rundata.ProxyComponent(d), Values: map[string]float64{rundata.MetricProxyInflight: f(i)}})
				}
			}
			if got := DescribeInferred(inferLimits(r, tt.errors, nil)); got != tt.want {
				t.Errorf("inferred %q, want %q", got, tt.want)
			}
		})
	}
}

// TestResourceOfInferred: for a service without pool metrics, the resource
// a degraded endpoint is named with is the limit inferred over a
// dependency it calls (by the call graph): /recommend, calling RECS, under
// the limit shared by PRICING and RECS; /cart under STOCK's own; a limit
// over dependencies an endpoint does not call is not its resource.
func TestResourceOfInferred(t *testing.T) {
	data := &rundir.Run{Meta: rundata.RunMeta{External: true, Endpoints: []rundata.EndpointInfo{{Name: "price"}, {Name: "recommend"}, {Name: "cart"}}},
		CallGraph: &rundata.CallGraph{Edges: map[string][]string{"price": {"PRICING"}, "recommend": {"RECS"}, "cart": {"STOCK"}}}}
	s := RunSummary{Exhausted: Exhaustion{Resource: ResourcePoolInferred},
		Inferred: []InferredLimit{{Dependencies: []string{"STOCK"}, Limit: 4, AfterFaultS: 0.5}, {Dependencies: []string{"PRICING", "RECS"}, Limit: 8, AfterFaultS: 0.25}}}
	for ep, want := range map[string]string{"recommend": "pool (inferred) PRICING+RECS", "price": "pool (inferred) PRICING+RECS", "cart": "pool (inferred) STOCK"} {
		if got := ResourceOf(s, data, ep).Label(); got != want {
			t.Errorf("/%s: %q, want %q", ep, got, want)
		}
	}
	s.Inferred = s.Inferred[:1]
	if got := ResourceOf(s, data, "recommend"); got.Resource != "" {
		t.Errorf("/recommend, only STOCK capped: %+v, want none", got)
	}
	if got := ResourceOf(RunSummary{}, data, "recommend"); got.Resource != "" {
		t.Errorf("nothing ran out: %+v", got)
	}
}
