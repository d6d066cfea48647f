package faultproxy

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

type swapResult struct {
	start, end time.Time
	status     int
	body       string
	err        error
}

type swapPhase struct {
	name   string
	faults []Fault
	check  func(r swapResult) bool
}

// TestSwapUnderLoad swaps fault sets while 8 workers send requests. Every
// request gets an answer, and every request that did not overlap a swap
// got exactly the fault of the set current at the time.
func TestSwapUnderLoad(t *testing.T) {
	e := newEnv(t)
	const lat = 30 * time.Millisecond
	phases := []swapPhase{
		{"pass", nil, func(r swapResult) bool { return r.status == 200 && strings.HasPrefix(r.body, "upstream") }},
		{"error A", []Fault{{Type: TypeError, Percent: 100, Params: Reply{Status: 503, Body: "A"}}}, func(r swapResult) bool { return r.status == 503 && r.body == "A" }},
		{"latency", []Fault{{Type: TypeLatency, Percent: 100, Params: Delay{Latency: lat}}}, func(r swapResult) bool {
			return r.status == 200 && strings.HasPrefix(r.body, "upstream") && r.end.Sub(r.start) >= lat
		}},
		{"error B", []Fault{{Type: TypeError, Percent: 100, Params: Reply{Status: 500, Body: "B"}}}, func(r swapResult) bool { return r.status == 500 && r.body == "B" }},
	}
	type swap struct {
		t0, t1 time.Time
		phase  int
	}
	var swaps []swap
	ctx, stop := context.WithCancel(context.Background())
	var mu sync.Mutex
	var results []swapResult
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000 && ctx.Err() == nil; i++ {
				r := swapResult{start: time.Now()}
				r.status, r.body, _, r.err = e.get(context.Background(), "/", "")
				r.end = time.Now()
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
			}
		}()
	}
	for k := 0; k < 12; k++ {
		ph := k % len(phases)
		s := swap{t0: time.Now(), phase: ph}
		e.set(t, phases[ph].faults...)
		s.t1 = time.Now()
		swaps = append(swaps, s)
		time.Sleep(60 * time.Millisecond) // let the phase run
	}
	stop()
	wg.Wait()

	checked := 0
	for _, r := range results {
		if r.err != nil {
			t.Fatalf("request dropped during fault swaps: %v", r.err)
		}
		cur, overlaps := -1, false
		for _, s := range swaps {
			if !s.t0.After(r.end) && !s.t1.Before(r.start) {
				overlaps = true
			}
			if s.t1.Before(r.start) {
				cur = s.phase
			}
		}
		if overlaps || cur < 0 {
			continue
		}
		checked++
		if !phases[cur].check(r) {
			t.Errorf("request during phase %q got %d %q after %v", phases[cur].name, r.status, r.body, r.end.Sub(r.start))
		}
	}
	t.Logf("%d requests, %d outside swap instants checked", len(results), checked)
	if checked < 100 {
		t.Errorf("only %d requests checked, want ≥ 100: %s", checked, fmt.Sprint(len(results)))
	}
}
