package loadgen

import (
	"context"
	"testing"
	"time"
)

// TestOnResult: OnResult sees every recorded result of every target, once,
// with its endpoint, class, success and times, and none of a retrying
// client's attempt records; the calls are sequential (the race detector
// would see two at once through the plain counters).
func TestOnResult(t *testing.T) {
	ok := okServer(t)
	rej, hits := rejectingServer(t, 0.5, 0, "")
	type tally struct{ n, ok int64 }
	got := map[string]*tally{"a": {}, "b": {}}
	var badTimes, badOK int
	var lastDone time.Time
	cfg := Config{
		Targets: []Target{{Name: "a", URL: ok.URL, Rate: 100},
			{Name: "b", URL: rej.URL, Rate: 100, Retry: &Retry{Attempts: 3}}},
		Phases: []Phase{{Name: "one", Duration: 500 * time.Millisecond}, {Name: "two", Duration: 500 * time.Millisecond}},
		Window: 250 * time.Millisecond, Timeout: 2 * time.Second, LagThreshold: 50 * time.Millisecond,
		OnResult: func(ev ResultEvent) {
			tl := got[ev.Endpoint]
			tl.n++
			if ev.OK {
				tl.ok++
			}
			if ev.OK != (ev.Class == ClassOK) {
				badOK++
			}
			if !ev.Done.Equal(ev.Sent.Add(ev.Latency)) || ev.Latency <= 0 || ev.Sent.IsZero() {
				badTimes++
			}
			lastDone = ev.Done
		},
	}
	start := time.Now()
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if badOK != 0 || badTimes != 0 {
		t.Errorf("%d events with OK not matching their class, %d with inconsistent times", badOK, badTimes)
	}
	if lastDone.Before(start) || lastDone.After(time.Now()) {
		t.Errorf("last result done at %v, outside the run [%v, %v]", lastDone, start, time.Now())
	}
	want := map[string]tally{}
	for _, ps := range rep.Phases {
		w := want[ps.Endpoint]
		w.n += ps.Counts.Total()
		w.ok += ps.Counts[ClassOK]
		want[ps.Endpoint] = w
	}
	for ep, w := range want {
		if g := *got[ep]; g != w {
			t.Errorf("/%s: OnResult saw %d results (%d ok), the report %d (%d ok)", ep, g.n, g.ok, w.n, w.ok)
		}
	}
	if w := want["b"]; w.n != 100 || hits.Load() <= w.n || w.ok == w.n {
		t.Errorf("/b: %d results (%d ok) from %d attempts: want 100 results, retries beyond them and some failures", w.n, w.ok, hits.Load())
	}
}

// TestOnResultAllocates: the hook costs the aggregator no allocation.
func TestOnResultAllocates(t *testing.T) {
	allocs := func(hook func(ResultEvent)) float64 {
		phases := []phaseSpan{{"only", 0, int64(time.Second)}}
		a := testAgg(time.Second, time.Second, phases, 1e6) // one window that stays open
		a.cfg.onResult = hook
		s := a.eps[0].sched.(schedule)
		n := int64(0)
		add := func() {
			a.add(sample{intended: s.at(n), actual: s.at(n), latency: int64(time.Millisecond), class: ClassOK})
			n++
		}
		add() // opens the window
		return testing.AllocsPerRun(1000, add)
	}
	var sum time.Duration
	without, with := allocs(nil), allocs(func(ev ResultEvent) { sum += ev.Latency })
	if with > without || with != 0 {
		t.Errorf("allocations per result: %v with OnResult, %v without; want 0", with, without)
	}
	if sum == 0 {
		t.Error("the hook was not called")
	}
}

// TestOnResultNil: a Config without OnResult runs as before (no hook, no
// panic).
func TestOnResultNil(t *testing.T) {
	a := testAgg(time.Second, time.Second, []phaseSpan{{"only", 0, int64(time.Second)}}, 10)
	a.add(sample{intended: 0, actual: 0, latency: 1, class: ClassOK})
	if a.eps[0].received != 1 {
		t.Errorf("received %d, want 1", a.eps[0].received)
	}
}
