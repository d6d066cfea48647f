package measure

import (
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// timingRun is a run of one endpoint, search, whose responses carry
// Server-Timing metrics: per phase (warmup, baseline, fault), name → p50
// in ms (p99 = 1.5 × p50, mean = p50 unless means, of the fault phase,
// says otherwise); roles as the spec declares them.
func timingRun(roles *rundata.TimingRoles, metrics map[string]map[string]float64, descs, means map[string]string) *Run {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &rundir.Run{Meta: rundata.RunMeta{External: true, TimingRoles: roles,
		Endpoints: []rundata.EndpointInfo{{Name: "search", Dependency: "DB"}}}}
	msOf := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	for i, ph := range []string{rundata.PhaseWarmup, rundata.PhaseBaseline, rundata.PhaseFault, rundata.PhaseRecovery} {
		start := t0.Add(time.Duration(i) * 5 * time.Second)
		r.Meta.Phases = append(r.Meta.Phases, rundata.PhaseSpan{Name: ph, Start: start, End: start.Add(5 * time.Second)})
		ps := rundata.PhaseStats{Endpoint: "search", Phase: ph, Counts: rundata.Counts{rundata.ClassOK: 1000}}
		if m := metrics[ph]; m != nil {
			ps.ServerTiming = &rundata.ServerTiming{With: 990, Without: 10, Bad: 3}
			for _, name := range []string{"app", "db", "pool", "queue", "render", "total"} {
				if v, ok := m[name]; ok {
					q := rundata.Quantiles{Count: 990, P50: msOf(v), P99: msOf(v * 1.5), Mean: msOf(v)}
					if mean, err := time.ParseDuration(means[name]); err == nil && ph == rundata.PhaseFault {
						q.Mean = mean
					}
					ps.ServerTiming.Metrics = append(ps.ServerTiming.Metrics, rundata.TimingMetric{Name: name, Desc: descs[name], Dur: q})
				}
			}
		}
		r.Phases = append(r.Phases, ps)
	}
	return &Run{Data: r}
}

// TestWhereTimeServerTiming: the wait that grows beside flat work is
// reported as the wait, the work that grows beside a flat wait as the
// work, both and neither as such, a small move beside a large one as
// flat; roles follow the spec, then the defaults (a description can make
// a wait; total is left out); the warmup is left out and the phases
// without headers have no row.
func TestWhereTimeServerTiming(t *testing.T) {
	base := map[string]float64{"pool": 0.2, "db": 10.8, "total": 11}
	for _, tt := range []struct {
		name    string
		roles   *rundata.TimingRoles
		fault   map[string]float64
		descs   map[string]string
		means   map[string]string
		grew    string
		text    []string
		waitLen int
	}{
		{"the pool ran dry", nil, map[string]float64{"pool": 85, "db": 10.8, "total": 96}, nil, nil, GrewWait,
			[]string{"/search: fault phase: waited 85 ms (p50) for `pool`, worked 10.8 ms (p50) on `db`; ",
				"the wait grew (`pool` mean 0.2 → 85 ms) while the work stayed flat (`db` mean 10.8 → 10.8 ms): the time went to waiting"}, 1},
		{"the query became slower", nil, map[string]float64{"pool": 0.3, "db": 80, "total": 81}, nil, nil, GrewWork,
			[]string{"the work grew (`db` mean 10.8 → 80 ms) while the wait stayed flat (`pool` mean 0.2 → 0.3 ms)"}, 1},
		{"both", nil, map[string]float64{"pool": 40, "db": 80}, nil, nil, GrewBoth, []string{"both grew: the wait (`pool` mean 0.2 → 40 ms) and the work (`db` mean 10.8 → 80 ms)"}, 1},
		{"neither", nil, map[string]float64{"pool": 0.25, "db": 11.5}, nil, nil, GrewNeither, []string{"neither the wait nor the work grew"}, 1},
		{"some requests wait: the p50 flat, the mean up", nil, map[string]float64{"pool": 0.2, "db": 10.8}, nil, map[string]string{"pool": "16ms"}, GrewWait,
			[]string{"waited 0.2 ms (p50) for `pool`", "the wait grew (`pool` mean 0.2 → 16 ms)"}, 1},
		{"a small move beside a large one", nil, map[string]float64{"pool": 85, "db": 10.8}, nil, map[string]string{"db": "18ms"}, GrewWait,
			[]string{"while the work stayed flat (`db` mean 10.8 → 18 ms)"}, 1},
		{"a tenth of a large one is growth", nil, map[string]float64{"pool": 85, "db": 10.8}, nil, map[string]string{"db": "20ms"}, GrewBoth, nil, 1},
		{"declared roles win", &rundata.TimingRoles{Work: []string{"pool"}, Wait: []string{"db"}}, map[string]float64{"pool": 85, "db": 10.8}, nil, nil, GrewWork,
			[]string{"waited 10.8 ms (p50) for `db`, worked 85 ms (p50) on `pool`"}, 1},
		{"a description makes a wait", nil, map[string]float64{"pool": 0.2, "db": 10.8, "app": 50}, map[string]string{"app": "queue time"}, nil, GrewWait,
			[]string{"the wait grew (`app` + `pool` mean 0.2 → 50.2 ms)"}, 2},
		{"total declared work", &rundata.TimingRoles{Work: []string{"total"}}, map[string]float64{"pool": 85, "db": 10.8, "total": 96}, nil, nil, GrewBoth, nil, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := timingRun(tt.roles, map[string]map[string]float64{rundata.PhaseWarmup: base, rundata.PhaseBaseline: base, rundata.PhaseFault: tt.fault}, tt.descs, tt.means)
			w := timeSplits{r.Data}.whereTime()
			if w == nil || len(w.Rows) != 2 || w.Rows[0].Phase != rundata.PhaseBaseline || w.Rows[1].Phase != rundata.PhaseFault {
				t.Fatalf("rows %+v, want baseline and fault (no warmup, no recovery without headers)", w)
			}
			f := w.Rows[1]
			if f.Source != TimingServer || f.With != 990 || f.Without != 10 || f.Bad != 3 || len(f.Wait) != tt.waitLen {
				t.Errorf("fault row %+v", f)
			}
			for _, p := range append(f.Wait, f.Work...) {
				if p.Name == "total" && tt.roles == nil {
					t.Errorf("total reported as %+v: it holds wait and work, left out by default", p)
				}
			}
			if len(w.Shifts) != 1 || w.Shifts[0].Grew != tt.grew {
				t.Fatalf("shifts %+v, want one: %s", w.Shifts, tt.grew)
			}
			for _, s := range tt.text {
				if !strings.Contains(w.Shifts[0].Text, s) {
					t.Errorf("text %q\nwant it to contain %q", w.Shifts[0].Text, s)
				}
			}
		})
	}
	if w := (timeSplits{timingRun(nil, nil, nil, nil).Data}).whereTime(); w != nil {
		t.Errorf("no headers: %+v, want nil", w)
	}
	if w := (timeSplits{timingRun(nil, map[string]map[string]float64{rundata.PhaseFault: base}, nil, nil).Data}).whereTime(); w == nil || len(w.Shifts) != 0 {
		t.Errorf("no baseline: %+v, want a row and no shift", w)
	}
}

// TestWhereTimeConnMetrics: the built-in service's connection metrics give
// the same table, means only, their fault phase equal to the Connection
// waits table's; an endpoint without hold times has no row.
func TestWhereTimeConnMetrics(t *testing.T) {
	fs := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &rundir.Run{Meta: rundata.RunMeta{
		Endpoints: []rundata.EndpointInfo{{Name: "a", Dependency: "A"}, {Name: "b", Dependency: "B"}},
		Phases: []rundata.PhaseSpan{{Name: rundata.PhaseBaseline, Start: fs.Add(-5 * time.Second), End: fs},
			{Name: rundata.PhaseFault, Start: fs, End: fs.Add(5 * time.Second)}},
	}}
	var n, wait, hold float64
	for i := range 41 {
		at := fs.Add(-5*time.Second + time.Duration(i)*250*time.Millisecond)
		v := map[string]float64{rundir.PoolKey(rundata.MetricConnPoolLimit, "shared"): 8}
		if i > 0 {
			n += 10
			h, w := 0.001, 0.0
			if at.After(fs) {
				w = 0.077
			}
			hold += 10 * h
			wait += 10 * w
		}
		lb, la := rundata.L("dependency", "b"), rundata.L("dependency", "a")
		v[rundata.Key(rundata.MetricConnWaitCount, lb)], v[rundata.Key(rundata.MetricConnWaitSum, lb)] = n, wait
		v[rundata.Key(rundata.MetricConnHoldCount, lb)], v[rundata.Key(rundata.MetricConnHoldSum, lb)] = n, hold
		v[rundata.Key(rundata.MetricConnWaitCount, la)], v[rundata.Key(rundata.MetricConnWaitSum, la)] = n, 0
		r.Metrics = append(r.Metrics, rundata.MetricSample{Time: at, Component: rundata.ServiceComponent, Values: v})
	}
	run := &Run{Data: r}
	w := timeSplits{run.Data}.whereTime()
	if w == nil || len(w.Rows) != 2 {
		t.Fatalf("rows %+v, want /b's baseline and fault only", w)
	}
	f := w.Rows[1]
	cw := connPools{run.Data}.connWaitStats()
	if f.Endpoint != "b" || f.Source != TimingConnMetrics || len(f.Wait) != 1 || len(f.Work) != 1 ||
		f.Wait[0].MeanMs != cw[1].MeanWaitMs || f.Work[0].MeanMs != cw[1].MeanHoldMs {
		t.Errorf("fault row %+v; Connection waits %+v", f, cw[1])
	}
	if len(w.Shifts) != 1 || w.Shifts[0].Grew != GrewWait || !strings.Contains(w.Shifts[0].Text, "waited 77 ms (mean) for `conn_wait`, worked 1 ms (mean) on `conn_hold`; the wait grew (`conn_wait` mean 0 → 77 ms)") {
		t.Errorf("shifts %+v, want the wait grown, in means", w.Shifts)
	}
}
