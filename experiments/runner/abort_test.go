package runner

import (
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"go.uber.org/goleak"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/loadgen"
)

// TestAbortWindowErrorRate: the error rate is judged over the results of
// the last For only, and not on fewer than minAbortResults.
func TestAbortWindowErrorRate(t *testing.T) {
	ms := int64(time.Millisecond)
	a := &abortWindow{endpoint: "a", r: rundata.AbortRule{Endpoint: "a", ErrorRate: 0.5, For: 100 * time.Millisecond}}
	for i := range 4 {
		a.push(abortSample{done: int64(i) * ms, ok: false})
	}
	if a.evict(0); a.met() {
		t.Fatal("met on 4 results, fewer than the minimum")
	}
	for i := range 6 {
		a.push(abortSample{done: int64(10+i) * ms, ok: true})
	}
	// 4 failures of 10: below 0.5
	if a.evict(0); a.met() || a.count() != 10 {
		t.Fatalf("met at 4 of %d failed", a.count())
	}
	a.push(abortSample{done: 20 * ms, ok: false})
	a.push(abortSample{done: 21 * ms, ok: false})
	// 6 of 12
	if a.evict(0); !a.met() {
		t.Fatalf("not met at %d of %d failed", a.bad, a.count())
	}
	if got := a.trigger(); got != "/a error rate 0.50 over the last 100ms (6 of 12)" {
		t.Errorf("trigger %q", got)
	}
	// 105 ms on: the first four failures (done 0–3 ms) left the window
	if a.evict(105*ms - 100*ms); a.met() || a.count() != 8 || a.bad != 2 {
		t.Errorf("after eviction: %d of %d failed, met %v; want 2 of 8, not met", a.bad, a.count(), a.met())
	}
	a.evict(1000 * ms)
	if a.count() != 0 || a.bad != 0 || a.head != 0 {
		t.Errorf("emptied window: count %d bad %d head %d", a.count(), a.bad, a.head)
	}
}

// TestAbortWindowP99: a p99 rule is met exactly when the p99 of the
// window's latencies, as the records' HdrHistogram quantiles take it,
// reaches P99.
func TestAbortWindowP99(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	bound := 100 * time.Millisecond
	for trial := range 2000 {
		n := 5 + rng.IntN(400)
		slow := rng.IntN(max(1, n/30)) // around the p99's rank
		a := &abortWindow{endpoint: "a", r: rundata.AbortRule{P99: bound, For: time.Second}}
		h := hdrhistogram.New(1, int64(time.Minute), 3)
		for i := range n {
			lat := time.Duration(1+rng.IntN(int(bound/time.Millisecond)-2)) * time.Millisecond
			if i < slow {
				lat = bound + time.Duration(rng.IntN(50))*time.Millisecond
			}
			a.push(abortSample{done: int64(i), latency: lat, ok: true})
			if err := h.RecordValue(int64(lat)); err != nil {
				t.Fatal(err)
			}
		}
		// the histogram rounds to 3 significant digits, far below the
		// millisecond steps of the latencies
		want := time.Duration(h.ValueAtQuantile(99)) >= bound-time.Millisecond/2
		if got := a.met(); got != want {
			t.Fatalf("trial %d: %d results, %d at or above %v: met %v, the histogram's p99 %v", trial, n, slow, bound, got,
				time.Duration(h.ValueAtQuantile(99)))
		}
		if got := a.trigger(); a.met() && !strings.HasPrefix(got, "/a p99 1") {
			t.Errorf("trigger %q", got)
		}
	}
}

// TestAbortRuleCheck: malformed rules are refused before anything runs.
func TestAbortRuleCheck(t *testing.T) {
	eps := []string{"a", "b", rundata.CanaryEndpoint}
	ms := time.Millisecond
	for _, tc := range []struct {
		r    rundata.AbortRule
		want string
	}{
		{rundata.AbortRule{Endpoint: "a", ErrorRate: 0.5, For: 300 * ms}, ""},
		{rundata.AbortRule{Endpoint: "*", P99: 200 * ms, For: 300 * ms}, ""},
		{rundata.AbortRule{P99: 200 * ms, For: 300 * ms}, ""},
		{rundata.AbortRule{Probe: "http://127.0.0.1:9/healthz", For: 300 * ms}, ""},
		{rundata.AbortRule{Endpoint: "a", For: 300 * ms}, "exactly one"},
		{rundata.AbortRule{Endpoint: "a", ErrorRate: 0.5, P99: ms, For: 300 * ms}, "exactly one"},
		{rundata.AbortRule{Endpoint: "a", ErrorRate: 1.5, For: 300 * ms}, "not in (0, 1]"},
		{rundata.AbortRule{Endpoint: "a", ErrorRate: 0.5}, "for must be positive"},
		{rundata.AbortRule{Endpoint: "c", ErrorRate: 0.5, For: ms}, `endpoint "c"`},
		{rundata.AbortRule{Probe: "127.0.0.1:9", For: ms}, "not an http(s) URL"},
		{rundata.AbortRule{Probe: "http://127.0.0.1:9/", For: ms, ProbeInterval: -ms}, "negative"},
	} {
		err := checkAbortRule(tc.r, eps)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.r, err, tc.want)
		}
	}
	p := &plan.Plan{OnAbort: "halt"}
	if err := checkAbort(p); err == nil || !strings.Contains(err.Error(), "halt") {
		t.Errorf("on abort halt: %v", err)
	}
	if got := ruleText(rundata.AbortRule{Endpoint: "a", ErrorRate: 0.5, For: 500 * ms}); got != "/a's error rate ≥ 0.5 for 500ms" {
		t.Errorf("rule text %q", got)
	}
}

// TestAbortWatcherWaitsForTheWindow: an error-rate rule is judged only
// while the faults are in place, once they have been for For, then within
// a tick, and "*" judges each endpoint on its own.
func TestAbortWatcherWaitsForTheWindow(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	sw := &faultSwitcher{}
	rules := []rundata.AbortRule{{Endpoint: "*", ErrorRate: 0.5, For: 150 * time.Millisecond}}
	w := newAbortWatcher(rules, []string{"a", "b"}, sw)
	sw.watch = w
	w.start()
	fail := func(ep string, done time.Time) {
		w.onResult(loadgen.ResultEvent{Endpoint: ep, Class: loadgen.ClassDepError, Latency: time.Millisecond, Sent: done.Add(-time.Millisecond), Done: done})
	}
	for range 10 {
		fail("b", time.Now()) // before the faults: not judged
	}
	time.Sleep(rules[0].For + 2*abortTick)
	w.mu.Lock()
	unarmed := w.found
	w.mu.Unlock()
	if unarmed != nil {
		t.Fatalf("found met with no fault in place: %+v", unarmed)
	}
	since := time.Now()
	w.arm(since)
	ok := loadgen.ResultEvent{Endpoint: "a", Class: loadgen.ClassOK, OK: true, Latency: time.Millisecond}
	for range 20 {
		fail("b", time.Now())
		fail("a", time.Now()) // /a fails one in three
		ok.Done = time.Now()
		w.onResult(ok)
		w.onResult(ok)
		time.Sleep(2 * time.Millisecond)
	}
	w.mu.Lock()
	early := w.found
	w.mu.Unlock()
	if early != nil && early.at.Sub(since) < rules[0].For {
		t.Fatalf("found met %v after the faults were set, before the window of %v", early.at.Sub(since), rules[0].For)
	}
	time.Sleep(rules[0].For + 3*abortTick)
	got := w.stop()
	if got == nil {
		t.Fatal("no abort: /b failed every request")
	}
	if d := got.At.Sub(since); d < rules[0].For || d > rules[0].For+4*abortTick {
		t.Errorf("met %v after the faults were set, want within [%v, %v]", d, rules[0].For, rules[0].For+4*abortTick)
	}
	if !strings.HasPrefix(got.Trigger, "/b error rate 1.00") || got.Rule != "any endpoint's error rate ≥ 0.5 for 150ms" {
		t.Errorf("abort %+v: want /b's error rate 1.00", got)
	}
	if got.Cleared.Before(got.At) || !sw.aborted {
		t.Errorf("abort %+v, switcher aborted %v", got, sw.aborted)
	}
	if sw.watch.armed.Load() {
		t.Error("still armed after the abort")
	}
}

// TestAbortWatcherStops: stopping the watcher ends its loop and probes,
// armed or not (the goroutine check is the point).
func TestAbortWatcherStops(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var probes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { probes.Add(1) }))
	defer srv.Close()
	sw := &faultSwitcher{}
	rules := []rundata.AbortRule{{Probe: srv.URL, For: time.Second, ProbeInterval: 10 * time.Millisecond},
		{Endpoint: "a", P99: time.Second, For: time.Second}}
	w := newAbortWatcher(rules, []string{"a"}, sw)
	sw.watch = w
	w.start()
	w.arm(time.Now())
	time.Sleep(100 * time.Millisecond)
	if got := w.stop(); got != nil {
		t.Errorf("abort %+v from a healthy probe", got)
	}
	if n := probes.Load(); n < 3 {
		t.Errorf("%d probes in 100 ms at one per 10 ms", n)
	}
	var nilWatcher *abortWatcher // no rules: every method is a no-op
	nilWatcher.start()
	nilWatcher.arm(time.Now())
	nilWatcher.disarm()
	if nilWatcher.stop() != nil || newAbortWatcher(nil, nil, sw) != nil {
		t.Error("a watcher without rules")
	}
}

// fakeControl is a fault proxy's control API that keeps whether a fault
// is in place and counts the puts; failClear makes removing one fail.
type fakeControl struct {
	*httptest.Server
	inPlace   atomic.Bool
	puts      atomic.Int64
	failClear bool
}

func newFakeControl(failClear bool) *fakeControl {
	c := &fakeControl{failClear: failClear}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPut:
			c.puts.Add(1)
			c.inPlace.Store(true)
		case http.MethodDelete:
			if c.failClear {
				http.Error(w, `{"error":"refused"}`, http.StatusInternalServerError)
				return
			}
			c.inPlace.Store(false)
		}
		io.WriteString(w, `{"faults":[]}`)
	}))
	return c
}

// TestFaultSwitcherAbort: abortAll removes every fault in place at once,
// records each removal with its reason, and no later phase sets a fault
// again (not the probe's either); a removal that failed leaves Cleared
// zero and the fault for the final clear.
func TestFaultSwitcherAbort(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	a, b := newFakeControl(false), newFakeControl(false)
	defer a.Close()
	defer b.Close()
	fault := []faultproxy.Fault{{Type: faultproxy.TypeError, Percent: 100, Params: faultproxy.Reply{Status: 503}}}
	sw := &faultSwitcher{
		faults:   []plan.Faults{{Component: "proxy-A", Dependency: "A", Faults: fault}, {Component: "proxy-B", Dependency: "B", Faults: fault}},
		probe:    []plan.Faults{{Component: "proxy-A", Dependency: "A", Faults: fault}},
		controls: map[string]string{"proxy-A": a.URL, "proxy-B": b.URL},
	}
	sw.watch = newAbortWatcher([]rundata.AbortRule{{Endpoint: "a", ErrorRate: 0.5, For: time.Minute}}, []string{"a"}, sw)
	sw.onPhase(loadgen.Phase{Name: rundata.PhaseFault}, time.Time{})
	if !a.inPlace.Load() || !b.inPlace.Load() || !sw.watch.armed.Load() {
		t.Fatalf("fault phase: A %v, B %v in place, watcher armed %v", a.inPlace.Load(), b.inPlace.Load(), sw.watch.armed.Load())
	}
	cleared := sw.abortAll("because")
	for _, ph := range []string{rundata.PhaseRecovery, rundata.PhaseProbeAfter, rundata.PhaseFault} {
		sw.onPhase(loadgen.Phase{Name: ph}, time.Time{})
	}
	sw.clear()
	if sw.watch.stop() != nil {
		t.Error("the watcher acted on its own")
	}
	if a.inPlace.Load() || b.inPlace.Load() || a.puts.Load() != 1 || b.puts.Load() != 1 {
		t.Errorf("A in place %v after %d puts, B %v after %d; want each put once and removed", a.inPlace.Load(), a.puts.Load(), b.inPlace.Load(), b.puts.Load())
	}
	evs := sw.events()
	var actions []string
	for _, ev := range evs {
		actions = append(actions, ev.Action+" "+ev.Dependency+" "+ev.Reason)
		if ev.Action == rundata.FaultAbort && ev.Time.After(cleared) {
			t.Errorf("removed at %v, after the Cleared returned (%v)", ev.Time, cleared)
		}
	}
	slices.Sort(actions[2:])
	if got := strings.Join(actions, "; "); got != "set A ; set B ; abort A because; abort B because" {
		t.Errorf("events: %s", got)
	}
	if cleared.Before(evs[1].Time) || sw.failure() != nil {
		t.Errorf("cleared %v, failure %v", cleared, sw.failure())
	}

	bad := newFakeControl(true)
	defer bad.Close()
	sw = &faultSwitcher{faults: []plan.Faults{{Component: "proxy-A", Dependency: "A", Faults: fault}},
		controls: map[string]string{"proxy-A": bad.URL}}
	sw.onPhase(loadgen.Phase{Name: rundata.PhaseFault}, time.Time{})
	if cleared := sw.abortAll("because"); !cleared.IsZero() || sw.failure() == nil || len(sw.active) != 1 {
		t.Errorf("a removal refused: cleared %v, failure %v, %d fault sets kept for the final clear", cleared, sw.failure(), len(sw.active))
	}
}

// TestFaultSwitcherReplicas: a proxy with several replicas gets every
// switch on each one, each recorded with its replica's name and its own
// time; a replica that refuses a removal leaves the fault set active for
// the final clear, while its sibling's removal is recorded.
func TestFaultSwitcherReplicas(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	r0, r1, r2 := newFakeControl(false), newFakeControl(false), newFakeControl(true)
	defer r0.Close()
	defer r1.Close()
	defer r2.Close()
	fault := []faultproxy.Fault{{Type: faultproxy.TypeError, Percent: 100, Params: faultproxy.Reply{Status: 503}}}
	sw := &faultSwitcher{
		faults:   []plan.Faults{{Component: "proxy-A", Dependency: "A", Faults: fault}},
		replicas: map[string][]Control{"proxy-A": {{Name: "pod-0", URL: r0.URL}, {Name: "pod-1", URL: r1.URL}}},
	}
	sw.onPhase(loadgen.Phase{Name: rundata.PhaseFault}, time.Time{})
	if !r0.inPlace.Load() || !r1.inPlace.Load() {
		t.Fatalf("fault phase: pod-0 %v, pod-1 %v in place", r0.inPlace.Load(), r1.inPlace.Load())
	}
	sw.onPhase(loadgen.Phase{Name: rundata.PhaseRecovery}, time.Time{})
	if r0.inPlace.Load() || r1.inPlace.Load() || sw.failure() != nil {
		t.Fatalf("recovery: pod-0 %v, pod-1 %v in place, failure %v", r0.inPlace.Load(), r1.inPlace.Load(), sw.failure())
	}
	var got []string
	for _, ev := range sw.events() {
		if ev.Time.IsZero() {
			t.Errorf("%+v: no time", ev)
		}
		got = append(got, ev.Action+" "+ev.Replica)
	}
	slices.Sort(got)
	if s := strings.Join(got, "; "); s != "clear pod-0; clear pod-1; set pod-0; set pod-1" {
		t.Errorf("events: %s", s)
	}

	sw = &faultSwitcher{
		faults:   []plan.Faults{{Component: "proxy-A", Dependency: "A", Faults: fault}},
		replicas: map[string][]Control{"proxy-A": {{Name: "pod-0", URL: r0.URL}, {Name: "pod-2", URL: r2.URL}}},
	}
	sw.onPhase(loadgen.Phase{Name: rundata.PhaseFault}, time.Time{})
	sw.clear()
	if err := sw.failure(); err == nil || !strings.Contains(err.Error(), "replica pod-2") || len(sw.active) != 1 || r0.inPlace.Load() {
		t.Errorf("a replica refusing removal: failure %v, %d active, pod-0 in place %v", err, len(sw.active), r0.inPlace.Load())
	}
}
