package spec

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/internal/claims"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/loadgen"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// TestPlanJobs: the background-jobs preset's modes give the service a job
// queue (on the request pool, or on workers of their own) in its
// configuration and its serve flags; the drain condition's burst is one
// POST /jobs?n=1000&dependency=invoice at the fault phase's start, and the
// healthy one sends none; the run metadata records the queue and the
// burst; the resolved spec keeps both.
func TestPlanJobs(t *testing.T) {
	s, err := Preset("background-jobs")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Decidable([]string{claims.JobsStarve, claims.JobsIsolated}); len(got) != 2 {
		t.Fatalf("decidable %v, want both job claims", got)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*service.JobsConfig{
		"shared-workers": {Mode: service.JobsShared, Workers: 32},
		"own-workers":    {Mode: service.JobsOwn, Workers: 8},
	}
	faultAt := s.Phases.Warmup.D + s.Phases.Baseline.D
	for _, r := range p.Runs {
		var svc *plan.Component
		for i, c := range r.Components {
			if c.Service != nil {
				svc = &r.Components[i]
			}
		}
		if svc == nil {
			t.Fatalf("run %s has no service", r.ID)
		}
		if got := svc.Service.Config.Jobs; !reflect.DeepEqual(got, want[r.Mode]) {
			t.Errorf("run %s: job queue %+v, want %+v", r.ID, got, want[r.Mode])
		}
		if got := serveFlagsOf(t, *svc).Jobs; !reflect.DeepEqual(got, want[r.Mode]) {
			t.Errorf("run %s: serve flags %v give job queue %+v, want %+v", r.ID, svc.Args(), got, want[r.Mode])
		}
		wantMeta := &rundata.JobsInfo{Mode: string(want[r.Mode].Mode), Workers: want[r.Mode].Workers, Queue: service.DefaultJobsQueue}
		var wantBursts []loadgen.Burst
		if r.Condition == "drain" {
			wantMeta.Count, wantMeta.Dependency, wantMeta.Endpoint = 1000, "billing", "invoice"
			wantBursts = []loadgen.Burst{{Label: "jobs-drain", Target: "checkout", Requests: 1, At: faultAt,
				Method: "POST", Path: "/jobs?dependency=invoice&n=1000"}}
		}
		if !reflect.DeepEqual(r.Meta.Jobs, wantMeta) {
			t.Errorf("run %s: meta jobs %+v, want %+v", r.ID, r.Meta.Jobs, wantMeta)
		}
		if !reflect.DeepEqual(r.Load.Bursts, wantBursts) {
			t.Errorf("run %s: bursts %+v, want %+v", r.ID, r.Load.Bursts, wantBursts)
		}
	}
	y, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse("resolved.yaml", y)
	if err != nil {
		t.Fatalf("resolved spec does not parse: %v\n%s", err, y)
	}
	if !reflect.DeepEqual(again.Modes[1].Jobs, s.Modes[1].Jobs) || !reflect.DeepEqual(again.condition("drain").Jobs, s.condition("drain").Jobs) {
		t.Errorf("resolved spec: jobs %+v / %+v, want %+v / %+v", again.Modes[1].Jobs, again.condition("drain").Jobs, s.Modes[1].Jobs, s.condition("drain").Jobs)
	}
}

// TestJobsPreview: Little's law counts a burst of jobs on the request pool
// as its workers' permits (32 of the pool's 16: exhausted at once, from
// the burst on), and none on workers of their own; a burst later in the
// fault phase exhausts the pool from then on.
func TestJobsPreview(t *testing.T) {
	s, err := Preset("background-jobs")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cond, mode string
		fault      float64
		exhausted  bool
	}{{"drain", "shared-workers", 35, true}, {"drain", "own-workers", 3, false}, {"healthy", "shared-workers", 3, false}} {
		pools := s.Preview(s.condition(tc.cond), s.mode(tc.mode))
		if len(pools) != 1 {
			t.Fatalf("%s/%s: pools %+v", tc.cond, tc.mode, pools)
		}
		pl := pools[0]
		if d := pl.PredictedDemand[rundata.PhaseFault]; d < tc.fault-0.01 || d > tc.fault+0.01 || (pl.PredictedExhaustion > 0) != tc.exhausted {
			t.Errorf("%s/%s: fault demand %.2f, exhausted after %v; want %.0f, exhausted %v", tc.cond, tc.mode, d, pl.PredictedExhaustion, tc.fault, tc.exhausted)
		}
	}
	late, err := Parse("t.yaml", []byte(strings.Replace(presetText(t, "background-jobs"), "jobs: {count: 1000}", "jobs: {count: 1000, at: 4T}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if e := late.Preview(late.condition("drain"), late.mode("shared-workers"))[0].PredictedExhaustion; e < time.Second || e > 1100*time.Millisecond {
		t.Errorf("a burst 1 s into the fault: exhausted after %v, want just after 1s", e)
	}
}

// presetText is preset name's YAML.
func presetText(t *testing.T, name string) string {
	t.Helper()
	b, err := PresetSource(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestJobsOtherShapes: a live endpoint of another name and jobs on its own
// dependency, given by the condition's jobs.dependency; a job queue in a
// bulkhead layout, where the jobs draw from their endpoint's pool.
func TestJobsOtherShapes(t *testing.T) {
	s, err := Parse("t.yaml", []byte(`name: t
endpoints:
  - {name: storefront, dependency: db, path: shop}
  - {name: mailer, dependency: mail}
expectations:
  victim: storefront
  culprit: mailer
  jobs: {condition: reindex, bounded: [own]}
conditions:
  - healthy
  - {name: reindex, jobs: {count: 50, dependency: db, at: 500ms}}
modes:
  - {name: per-dep, pools: bulkhead, jobs: {mode: shared, workers: 4}}
  - {name: own, pools: shared, jobs: {mode: own, workers: 2, queue: 60}}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := Run{ID: "reindex-per-dep-r1", Condition: s.condition("reindex"), Mode: s.mode("per-dep")}
	b, ok := jobsPart{s}.jobsBurst(r, 9*time.Second)
	if !ok || b.Path != "/jobs?dependency=shop&n=50" || b.At != 9500*time.Millisecond || b.Target != "storefront" {
		t.Errorf("burst %+v, %v; want POST /jobs?dependency=shop&n=50 at 9.5 s", b, ok)
	}
	if info := (jobsPart{s}).jobsInfo(r.Condition, r.Mode); info.Endpoint != "shop" || info.Dependency != "db" || info.Queue != service.DefaultJobsQueue {
		t.Errorf("jobs info %+v, want endpoint shop, dependency db", info)
	}
	pools := s.Preview(s.condition("reindex"), s.mode("per-dep"))
	for _, pl := range pools {
		want := map[string]float64{"shop": 4 + s.Load.Rates["storefront"]*s.Dependencies["db"].Latency.D.Seconds(), "mailer": s.Load.Rates["mailer"] * s.Dependencies["mail"].Latency.D.Seconds()}[pl.Name]
		if d := pl.PredictedDemand[rundata.PhaseFault]; d < want-0.01 || d > want+0.01 {
			t.Errorf("pool %s: fault demand %.2f, want %.2f (the jobs' 4 workers in /shop's pool only)", pl.Name, d, want)
		}
	}
	if w := strings.Join(s.Warnings(), "\n"); !strings.Contains(w, "modes[0] (per-dep): the jobs of reindex hold at most 4 of pool shop's") {
		t.Errorf("warnings %q lack the drain that cannot hold its pool", w)
	}
}

// TestJobsErrors: every problem of a burst of jobs, a job queue or the
// job claims' roles is reported with file, line and field.
func TestJobsErrors(t *testing.T) {
	const head = "name: t\nendpoints:\n  - {name: live, dependency: A}\n  - {name: batch, dependency: B}\nexpectations: {victim: live, culprit: batch}\n"
	const queue = "modes:\n  - {name: q, pools: shared, jobs: {mode: own, workers: 4}}\n"
	ext := "external:\n  upstreams: {A: \"http://127.0.0.1:9001\", B: \"http://127.0.0.1:9002\"}\n  proxies: {A: \"127.0.0.1:7001\", B: \"127.0.0.1:7002\"}\n" +
		"  targets: {live: \"http://127.0.0.1:8080/live\", batch: \"http://127.0.0.1:8080/batch\"}\n"
	drain := func(jobs string) string { return "conditions:\n  - healthy\n  - name: drain\n    jobs: " + jobs + "\n" }
	roles := func(r string) string {
		return "name: t\nendpoints:\n  - {name: live, dependency: A}\n  - {name: batch, dependency: B}\n" + drain("{count: 10}") + queue +
			"  - {name: s, pools: shared, jobs: {mode: shared, workers: 8}}\nexpectations:\n  victim: live\n  culprit: batch\n  jobs: " + r + "\n"
	}
	for _, tc := range []struct{ yaml, want string }{
		{head + drain("{count: 0}") + queue, "t.yaml:9: conditions[1].jobs.count: must be between 1 and 65536, got 0"},
		{head + drain("{count: 100}") + "modes:\n  - {name: q, pools: shared, jobs: {mode: own, workers: 4, queue: 50}}\n",
			"t.yaml:9: conditions[1].jobs.count: 100 jobs do not fit mode q's queue of 50 (modes[0].jobs.queue): the service would refuse them all"},
		{head + "phases: {fault: 2s}\n" + drain("{count: 10, at: 2s}") + queue, "t.yaml:10: conditions[1].jobs.at: must be in [0, the fault phase (2s)), got 2s"},
		{head + drain("{count: 10, dependency: C}") + queue, `t.yaml:9: conditions[1].jobs.dependency: no endpoint calls "C"`},
		{head + drain("{count: 10}") + "modes:\n  - {name: q, pools: shared, jobs: {mode: own, workers: 4}}\n  - {name: plain, pools: shared}\n",
			"t.yaml:12: modes[1]: plain: conditions[1] (drain) enqueues jobs and this mode has no job queue: give it jobs: {mode: shared, workers: N}"},
		{head + drain("{count: 10}") + "modes:\n  - {name: q, pools: shared, instances: 2, jobs: {mode: own, workers: 4}}\n",
			"t.yaml:9: conditions[1].jobs: mode q runs 2 instances, each with a queue of its own"},
		{head + "modes:\n  - name: q\n    pools: shared\n    jobs: {mode: mine, workers: 4}\n", `t.yaml:9: modes[0].jobs.mode: must be "shared" or "own", got "mine"`},
		{head + "modes:\n  - name: q\n    pools: shared\n    jobs: {mode: own}\n", "t.yaml:9: modes[0].jobs.workers: must be between 1 and 4096, got 0"},
		{head + "modes:\n  - name: q\n    pools: shared\n    jobs: {mode: own, workers: 2, queue: -1}\n", "t.yaml:9: modes[0].jobs.queue: must be between 0"},
		{head + "modes:\n  - name: q\n    pools: unbounded\n    jobs: {mode: shared, workers: 2}\n",
			"t.yaml:9: modes[0].jobs.mode: shared runs jobs on the request pools, and the layout has none"},
		{"name: t\nendpoints:\n  - {name: live, dependency: A}\n  - {name: batch, dependency: B, path: jobs}\nexpectations: {victim: live, culprit: batch}\n" + queue,
			"t.yaml:4: endpoints[1].path: the name is the job queue's path (POST /jobs) when jobs are on"},
		{head + drain("{count: 10}") + ext + "modes:\n  - {name: q, pools: shared}\n",
			"conditions[1].jobs: enqueues jobs on the built-in service's job queue (POST /jobs)"},
		{head + ext + "modes:\n  - {name: q, pools: shared, jobs: {mode: own, workers: 2}}\n", "modes[0].jobs: is the built-in service's job queue"},
		{head + "conditions: [{name: drain, jobs: {count: 10}}]\nmodes:\n  - {name: q, pools: shared, jobs: {mode: own, workers: 2}}\n  - {name: plain, pools: shared}\n",
			"modes[1]: plain: conditions[0] (drain) enqueues jobs"},
		{roles("{condition: healthy, control: drain, bounded: [q]}"), `expectations.jobs.condition: condition "healthy" enqueues no jobs: give it jobs: {count: N}`},
		{roles("{condition: drain, control: drain, bounded: [q]}"), `expectations.jobs.control: must differ from the condition "drain"`},
		{roles("{condition: drain, bounded: []}"), "expectations.jobs.bounded: required: the modes whose jobs run on workers of their own"},
		{roles("{condition: drain, shared: s, bounded: [q, s]}"), `t.yaml:15: expectations.jobs.bounded[1]: "s" is the shared mode too`},
		{roles("{condition: drain, shared: x, bounded: [q]}"), `expectations.jobs.shared: no mode "x" in the matrix`},
		{roles("{condition: drain, bounded: [q, q]}"), `expectations.jobs.bounded[1]: "q" is named already (bounded[0])`},
		{roles("{condition: drain, bounded: [q], live: [live, nope]}"), `expectations.jobs.live[1]: no endpoint "nope" (default: expectations.victim; endpoints: live, batch)`},
		{roles("{condition: drain, bounded: [q]}\n  check: [JOBS-STARVE]"),
			"expectations.check[0]: JOBS-STARVE is judged only when expectations.jobs.shared names the mode whose jobs share the request pools"},
		{roles("{condition: drain, control: drain2, bounded: [q]}"), `expectations.jobs.control: no condition "drain2" in the matrix`},
	} {
		_, err := Parse("t.yaml", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.yaml, err, tc.want)
		}
	}
}
