// Package synth writes synthetic results folders for the analysis' tests:
// runs of the default experiment whose windows, phases and metrics follow a
// described behaviour, so that every verdict can be shown to pass and fail
// without running anything.
package synth

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// Run describes one synthetic run. The generator models the default
// experiment (docs/design.md §5): T = 250 ms, pools 20 or 10+10, 200 req/s per endpoint,
// phases 2+5+10+5 s with 1 s windows and 250 ms metric samples.
type Run struct {
	Cond, Mode string
	Repeat     int
	Invalid    bool    // meta.Valid false
	Truncated  bool    // interrupted: status and a cut windows file
	DegradeAt  float64 // shared+slow: seconds after fault start when /b degrades; < 0: never
	NoHelp     bool    // bulkhead+slow: /b degrades anyway (bulkheads do not help)
	SlowReject bool    // bulkhead+slow: /a's rejections wait a full T
	Gap        bool    // /b has an empty window and a window with no successes
	Conns      int     // > 0: the service shares this many connections and exports the pool
	// BFaultMs, if set, is /b's fault-phase p99 in ms (p50 four fifths of
	// it, no failures) under any condition; BBaselineP99Ms /b's baseline
	// p99 (stragglers of a warm-up).
	BFaultMs, BBaselineP99Ms float64
	Seed                     uint64
}

var synthBase = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

const T = 250 * time.Millisecond

var synthPhases = []struct {
	name string
	secs int
}{{rundata.PhaseWarmup, 2}, {rundata.PhaseBaseline, 5}, {rundata.PhaseFault, 10}, {rundata.PhaseRecovery, 5}}

// Write writes a results folder with the given runs and spec text into
// dir (created if needed) and returns dir.
func Write(t testing.TB, dir, spec string, runs []Run) string {
	t.Helper()
	idx := rundata.Index{Experiment: "synthetic", Started: synthBase}
	for i, r := range runs {
		id := fmt.Sprintf("%s-%s-r%d", r.Cond, r.Mode, r.Repeat)
		st := rundata.StatusComplete
		if r.Truncated {
			st = rundata.StatusInterrupted
		}
		idx.Runs = append(idx.Runs, rundata.IndexEntry{ID: id, Mode: r.Mode, Condition: r.Cond, Repeat: r.Repeat, Status: st})
		writeSynthRun(t, filepath.Join(dir, rundata.RunsDir, id), id, synthBase.Add(time.Duration(i)*time.Minute), r)
	}
	mustWriteJSON(t, filepath.Join(dir, rundata.IndexFile), idx)
	if spec != "" {
		if err := os.WriteFile(filepath.Join(dir, rundata.SpecFile), []byte(spec), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func mustWriteJSON(t testing.TB, path string, v any) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeJSONLines[T any](t testing.TB, path string, vs []T, cut bool) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	for _, v := range vs {
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	if cut {
		fmt.Fprint(f, `{"endpoint":"a","pha`) // a line cut by a crash
	}
}

// behaviour is what one endpoint does in one window.
type behaviour struct {
	p50, p99  float64 // ms, of all results
	failShare float64
	failClass rundata.Class
	failMs    float64 // latency of failures
	rate      float64
}

func (r Run) behave(ep, phase string, since float64, rng *rand.Rand) behaviour {
	jit := 1 + 0.05*(rng.Float64()-0.5)
	b := behaviour{p50: 10 * jit, p99: 14 * jit, rate: 200}
	fault := phase == rundata.PhaseFault
	switch {
	case r.Cond == "busy" && ep == "a" && fault:
		b.rate = 400
		if r.Mode == "bulkhead" {
			b.failShare, b.failClass, b.failMs = 0.3, rundata.ClassRejected, 1
		} else {
			b.failShare, b.failClass, b.failMs = 0.02, rundata.ClassRejected, 1
		}
	case r.Cond == "slow" && fault && ep == "a":
		b.p50, b.p99 = 240*jit, 250
		b.failShare, b.failClass, b.failMs = 0.75, rundata.ClassRejected, 0.8
		if r.Mode == "shared" || r.SlowReject {
			b.failMs = 250
		}
	case r.Cond == "slow" && fault && ep == "b" && r.Mode == "shared" && r.DegradeAt >= 0 && since >= r.DegradeAt:
		b.p50, b.p99 = 200*jit, 250
		b.failShare, b.failClass, b.failMs = 0.5, rundata.ClassRejected, 250
	case r.Cond == "slow" && fault && ep == "b" && r.Mode == "bulkhead" && r.NoHelp:
		b.p50, b.p99 = 200*jit, 250
		b.failShare, b.failClass, b.failMs = 0.5, rundata.ClassDepTimeout, 250
	case r.Cond == "failing" && fault && ep == "a":
		b.p50, b.p99 = 2, 3
		b.failShare, b.failClass, b.failMs = 1, rundata.ClassDepError, 2
	case r.Cond == "failing" && fault && ep == "b" && r.Mode == "shared":
		b.p99 = 20 * jit
	}
	switch {
	case ep == "b" && fault && r.BFaultMs > 0:
		b.p50, b.p99, b.failShare = 0.8*r.BFaultMs, r.BFaultMs, 0
	case ep == "b" && phase == rundata.PhaseBaseline && r.BBaselineP99Ms > 0:
		b.p99 = r.BBaselineP99Ms
	}
	return b
}

func Q(p50, p99 float64, n int64) rundata.Quantiles {
	d := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	if n == 0 {
		return rundata.Quantiles{}
	}
	return rundata.Quantiles{Count: n, P50: d(p50), P90: d((p50 + p99) / 2), P99: d(p99), P999: d(p99 * 1.05), Max: d(p99 * 1.1), Mean: d(p50 * 1.05)}
}

func writeSynthRun(t testing.TB, dir, id string, start time.Time, r Run) {
	t.Helper()
	rng := rand.New(rand.NewPCG(r.Seed, uint64(r.Repeat)))
	meta := synthMeta(id, start, r)
	var wins []rundata.Window
	phases := map[string]*rundata.PhaseStats{}
	idx := 0
	var faultStart time.Time
	for _, ph := range synthPhases {
		ps := rundata.PhaseSpan{Name: ph.name, Start: start.Add(time.Duration(idx) * time.Second)}
		ps.End = ps.Start.Add(time.Duration(ph.secs) * time.Second)
		meta.Phases = append(meta.Phases, ps)
		if ph.name == rundata.PhaseFault {
			faultStart = ps.Start
		}
		for k := 0; k < ph.secs; k, idx = k+1, idx+1 {
			for _, ep := range []string{"a", "b"} {
				since := float64(k) // seconds since the phase started
				w := synthWindow(ep, ph.name, idx, start, r.behave(ep, ph.name, since, rng))
				if r.Gap && ep == "b" && ph.name == rundata.PhaseFault && k == 3 {
					w.Counts, w.Latency, w.LatencyOK = rundata.Counts{}, rundata.Quantiles{}, rundata.Quantiles{}
				}
				if r.Gap && ep == "b" && ph.name == rundata.PhaseFault && k == 5 {
					w.Counts = rundata.Counts{rundata.ClassDepTimeout: 200}
					w.LatencyOK = rundata.Quantiles{}
				}
				wins = append(wins, w)
				mergeInto(phases, w, r.behave(ep, ph.name, since, rand.New(rand.NewPCG(1, 1))).failMs)
			}
		}
	}
	meta.Faults = synthFaults(r, faultStart)
	meta.Validity = synthValidity(r, phases)
	meta.Valid = !r.Invalid
	mustWriteJSON(t, filepath.Join(dir, rundata.MetaFile), meta)
	if r.Truncated {
		wins = wins[:len(wins)*2/3]
	}
	writeJSONLines(t, filepath.Join(dir, rundata.WindowsFile), wins, r.Truncated)
	if !r.Truncated {
		var list []rundata.PhaseStats
		for _, ep := range []string{"a", "b"} {
			for _, ph := range synthPhases {
				list = append(list, *phases[ep+"/"+ph.name])
			}
		}
		mustWriteJSON(t, filepath.Join(dir, rundata.PhasesFile), list)
	}
	writeJSONLines(t, filepath.Join(dir, rundata.MetricsFile), synthMetrics(r, start, wins), false)
}

func synthMeta(id string, start time.Time, r Run) rundata.RunMeta {
	m := rundata.RunMeta{Experiment: "synthetic", ID: id, Mode: r.Mode, Condition: r.Cond, Repeat: r.Repeat, Seed: int64(r.Seed),
		Status: rundata.StatusComplete, Started: start, Ended: start.Add(22 * time.Second),
		Versions: map[string]string{"go": "go1.26", "num_cpu": "2"}, Timeout: T, ClientTimeout: 2 * time.Second, Window: time.Second}
	if r.Truncated {
		m.Status, m.Ended, m.Error = rundata.StatusInterrupted, time.Time{}, "interrupted"
	}
	rateA := 200.0
	if r.Cond == "busy" {
		rateA = 400
	}
	hold := map[string]float64{"a": 0.010, "b": 0.010}
	if r.Cond == "slow" {
		hold["a"] = 0.225
	}
	demand := func(eps ...string) map[string]float64 {
		d := map[string]float64{}
		for _, ph := range synthPhases {
			for _, ep := range eps {
				rate, h := 200.0, 0.010
				if ph.name == rundata.PhaseFault {
					h = hold[ep]
					if ep == "a" {
						rate = rateA
					}
				}
				d[ph.name] += rate * h
			}
		}
		return d
	}
	pool := func(name string, limit, queue int, eps ...string) rundata.PoolInfo {
		p := rundata.PoolInfo{Name: name, Limit: limit, Queue: queue, MaxWait: T, Endpoints: eps, PredictedDemand: demand(eps...)}
		if r.Cond == "slow" && p.PredictedDemand[rundata.PhaseFault] > float64(limit) {
			p.PredictedExhaustion = time.Duration(float64(limit) / 200 * float64(time.Second))
		}
		return p
	}
	if r.Mode == "shared" {
		m.Pools = []rundata.PoolInfo{pool("shared", 20, 20, "a", "b")}
	} else {
		m.Pools = []rundata.PoolInfo{pool("a", 10, 10, "a"), pool("b", 10, 10, "b")}
	}
	for _, ep := range []string{"a", "b"} {
		p := ep
		if r.Mode == "shared" {
			p = "shared"
		}
		rate := 200.0
		if ep == "a" {
			rate = rateA
		}
		m.Endpoints = append(m.Endpoints, rundata.EndpointInfo{Name: ep, Dependency: map[string]string{"a": "A", "b": "B"}[ep], Pool: p, Rate: rate, BaseLatency: 10 * time.Millisecond})
	}
	return m
}

func synthWindow(ep, phase string, idx int, start time.Time, b behaviour) rundata.Window {
	n := int64(b.rate)
	failed := int64(b.failShare * float64(n))
	w := rundata.Window{Endpoint: ep, Phase: phase, Index: idx, Start: start.Add(time.Duration(idx) * time.Second),
		Offset: time.Duration(idx) * time.Second, Duration: time.Second, TargetRate: b.rate, Rate: b.rate}
	w.Counts[rundata.ClassOK] = n - failed
	w.Counts[b.failClass] += failed
	w.Latency = Q(b.p50, b.p99, n)
	w.LatencyOK = Q(b.p50, b.p99, n-failed)
	w.LatencyIntended = w.Latency
	w.LagP99 = 200 * time.Microsecond
	w.LagMax = time.Millisecond
	return w
}

// mergeInto accumulates w into the phase summaries (p99 as the max of the
// windows; good enough for synthetic data), with the failures' latency.
func mergeInto(m map[string]*rundata.PhaseStats, w rundata.Window, failMs float64) {
	k := w.Endpoint + "/" + w.Phase
	ps := m[k]
	if ps == nil {
		ps = &rundata.PhaseStats{Endpoint: w.Endpoint, Phase: w.Phase, ByClass: map[string]rundata.Quantiles{}}
		m[k] = ps
	}
	for i, c := range w.Counts {
		ps.Counts[i] += c
	}
	mergeQ := func(dst *rundata.Quantiles, src rundata.Quantiles) {
		if src.Count == 0 {
			return
		}
		n := dst.Count + src.Count
		*dst = rundata.Quantiles{Count: n, P50: max(dst.P50, src.P50), P90: max(dst.P90, src.P90), P99: max(dst.P99, src.P99),
			P999: max(dst.P999, src.P999), Max: max(dst.Max, src.Max), Mean: max(dst.Mean, src.Mean)}
	}
	mergeQ(&ps.Latency, w.Latency)
	mergeQ(&ps.LatencyOK, w.LatencyOK)
	ps.LatencyIntended = ps.Latency
	for c := rundata.ClassRejected; c < rundata.NumClasses; c++ {
		if w.Counts[c] == 0 {
			continue
		}
		fq := ps.ByClass[c.String()]
		mergeQ(&fq, Q(failMs, failMs*1.1, w.Counts[c]))
		ps.ByClass[c.String()] = fq
	}
}

func synthFaults(r Run, fs time.Time) []rundata.FaultEvent {
	var body string
	switch r.Cond {
	case "slow":
		body = `[{"type":"latency","percent":100,"latency":"225ms","jitter":"10ms"}]`
	case "failing":
		body = `[{"type":"error","percent":100,"status":503}]`
	default:
		return nil
	}
	return []rundata.FaultEvent{
		{Time: fs.Add(3 * time.Millisecond), Dependency: "A", Action: "set", Faults: []byte(body)},
		{Time: fs.Add(10*time.Second + 2*time.Millisecond), Dependency: "A", Action: "clear"},
	}
}

func synthValidity(r Run, phases map[string]*rundata.PhaseStats) []rundata.PhaseValidity {
	var out []rundata.PhaseValidity
	for _, ep := range []string{"a", "b"} {
		for _, ph := range synthPhases {
			v := rundata.PhaseValidity{Endpoint: ep, Phase: ph.name, Valid: true, TargetRate: 200, AchievedRate: 200, LagP99: 200 * time.Microsecond}
			if r.Invalid && ph.name == rundata.PhaseFault {
				// 10 % of the fault phase's sends short, as the load generator records it.
				v.Valid, v.AchievedRate = false, 180
				v.Broken = []rundata.Broken{{Rule: rundata.RuleRate, Endpoint: ep, Phase: ph.name, Measured: 180, Limit: 200,
					Unit: rundata.UnitPerSecond, Count: 180 * int64(ph.secs), Of: 200 * int64(ph.secs), Tolerance: 0.01 * 200 * float64(ph.secs)}}
			}
			out = append(out, v)
		}
	}
	return out
}

// synthMetrics samples every 250 ms: the service's pools (filling at λ per
// Little's law towards λ·W, capped at the limit), its process stats, and
// three other components.
func synthMetrics(r Run, start time.Time, wins []rundata.Window) []rundata.MetricSample {
	meta := synthMeta("", start, r)
	fs := start.Add(7 * time.Second)
	fe := fs.Add(10 * time.Second)
	var out []rundata.MetricSample
	rejected := map[string]float64{}
	depSum := map[string]float64{}
	depCnt := map[string]float64{}
	var cpu float64
	for i := 0; i <= 88; i++ {
		t := start.Add(time.Duration(i) * 250 * time.Millisecond)
		inFault := !t.Before(fs) && t.Before(fe)
		v := map[string]float64{
			"process_resident_memory_bytes": 30e6, "go_goroutines": 60, "go_sched_gomaxprocs_threads": 2,
		}
		cpu += 0.25 * 0.3
		v["process_cpu_seconds_total"] = cpu
		for _, p := range meta.Pools {
			var demand float64
			for _, ep := range p.Endpoints {
				d := p.PredictedDemand[rundata.PhaseBaseline] / float64(len(p.Endpoints))
				if inFault {
					d = min(p.PredictedDemand[rundata.PhaseFault], 200*t.Sub(fs).Seconds()+2)
					if len(p.Endpoints) > 1 && ep == "b" {
						d = 0
					}
				}
				demand += d
			}
			lim := float64(p.Limit)
			inUse, waiting := min(demand, lim), 0.0
			if demand > lim {
				waiting = float64(p.Queue)
				rejected[p.Name] += 0.25 * 100
			}
			v[rundata.Key("bulkhead_pool_limit", rundata.L("pool", p.Name))] = lim
			v[rundata.Key("bulkhead_pool_queue_limit", rundata.L("pool", p.Name))] = float64(p.Queue)
			v[rundata.Key("bulkhead_pool_in_use", rundata.L("pool", p.Name))] = inUse
			v[rundata.Key("bulkhead_pool_waiting", rundata.L("pool", p.Name))] = waiting
			v[`bulkhead_pool_rejected_total{pool="`+p.Name+`",reason="full"}`] = rejected[p.Name]
			v[`bulkhead_pool_rejected_total{pool="`+p.Name+`",reason="wait_timeout"}`] = 0
		}
		if r.Conns > 0 {
			synthConns(v, r.Conns, meta.Pools)
		}
		for _, e := range meta.Endpoints {
			w := 0.010
			if inFault && r.Cond == "slow" && e.Name == "a" {
				w = 0.225
			}
			depCnt[e.Dependency] += 0.25 * 150
			depSum[e.Dependency] += 0.25 * 150 * w
			v[`bulkheadlab_dependency_duration_seconds_sum{dependency="`+e.Name+`"}`] = depSum[e.Dependency]
			v[`bulkheadlab_dependency_duration_seconds_count{dependency="`+e.Name+`"}`] = depCnt[e.Dependency]
			v[`bulkheadlab_dependency_requests_total{dependency="`+e.Name+`",outcome="timeout"}`] = 0
		}
		out = append(out, rundata.MetricSample{Time: t, Component: rundata.ServiceComponent, Values: v})
		for _, c := range []string{"proxy-A", "dep-A", "loadgen"} {
			out = append(out, rundata.MetricSample{Time: t, Component: c, Values: map[string]float64{
				"process_cpu_seconds_total": float64(i) * 0.02, "process_resident_memory_bytes": 20e6, "go_goroutines": 30}})
		}
	}
	return out
}

// synthConns adds a connection pool of k shared by every dependency to the
// service's sample v: each permit in use wants a connection, and the calls
// beyond k wait for one.
func synthConns(v map[string]float64, k int, pools []rundata.PoolInfo) {
	want := 0.0
	for _, p := range pools {
		want += v[rundata.Key("bulkhead_pool_in_use", rundata.L("pool", p.Name))]
	}
	v[rundata.Key(rundata.MetricConnPoolLimit, rundata.L("pool", "shared"))] = float64(k)
	v[rundata.Key(rundata.MetricConnPoolInUse, rundata.L("pool", "shared"))] = min(want, float64(k))
	v[rundata.Key(rundata.MetricConnPoolWaiting, rundata.L("pool", "shared"))] = max(0, want-float64(k))
}

// Matrix returns the runs of the default matrix (4 conditions × 2 modes)
// with repeats, each passed through tweak (which may drop it by returning
// false).
func Matrix(repeats int, tweak func(*Run) bool) []Run {
	var out []Run
	for _, cond := range []string{"healthy", "slow", "failing", "busy"} {
		for _, mode := range []string{"shared", "bulkhead"} {
			for rep := 1; rep <= repeats; rep++ {
				r := Run{Cond: cond, Mode: mode, Repeat: rep, DegradeAt: 1, Seed: uint64(rep)}
				if tweak == nil || tweak(&r) {
					out = append(out, r)
				}
			}
		}
	}
	return out
}
