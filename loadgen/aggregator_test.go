package loadgen

import (
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// testAgg builds an aggregator for endpoints at the given rates.
func testAgg(dur, win time.Duration, phases []phaseSpan, rates ...float64) *aggregator {
	cfg := aggConfig{t0: time.Unix(1700000000, 0), window: int64(win), duration: int64(dur),
		lagThreshold: int64(5 * time.Millisecond), phases: phases, maxOpen: 8}
	for i, r := range rates {
		cfg.endpoints = append(cfg.endpoints, string(rune('a'+i)))
		cfg.schedules = append(cfg.schedules, newSchedule(r, int64(dur)))
	}
	return newAggregator(cfg)
}

func TestScheduleCounts(t *testing.T) {
	tests := []struct {
		rate     float64
		dur      time.Duration
		from, to time.Duration
		want     int64
	}{
		{100, time.Second, 0, time.Second, 100},
		{100, time.Second, 0, 500 * time.Millisecond, 50},
		{3, time.Second, 0, time.Second, 3},
		{3, time.Second, 0, 334 * time.Millisecond, 2}, // due at 0 and 333.33ms
		{0.5, 3 * time.Second, time.Second, 3 * time.Second, 1},
		{1000, 2 * time.Second, 1500 * time.Millisecond, 5 * time.Second, 500},
	}
	for _, tt := range tests {
		s := newSchedule(tt.rate, int64(tt.dur))
		if got := s.countIn(int64(tt.from), int64(tt.to)); got != tt.want {
			t.Errorf("rate %v dur %v: countIn(%v, %v) = %d, want %d", tt.rate, tt.dur, tt.from, tt.to, got, tt.want)
		}
	}
}

func TestAggregatorOutOfOrderAndLag(t *testing.T) {
	phases := []phaseSpan{{"base", 0, int64(time.Second)}, {"fault", int64(time.Second), int64(2 * time.Second)}}
	a := testAgg(2*time.Second, time.Second, phases, 10)
	s := a.eps[0].sched.(schedule)
	// Feed the second window first: window 0 must stay open until complete.
	for n := int64(19); n >= 0; n-- {
		lag := int64(0)
		if n >= 10 {
			lag = int64(50 * time.Millisecond) // the fault phase is sent late
		}
		a.add(sample{intended: s.at(n), actual: s.at(n) + lag, latency: int64(time.Millisecond), class: ClassOK})
		if n == 10 && len(a.windows) != 0 {
			t.Fatalf("a window closed before window 0 was complete: %+v", a.windows)
		}
	}
	a.flush(int64(2 * time.Second))
	if len(a.windows) != 2 {
		t.Fatalf("windows = %d, want 2", len(a.windows))
	}
	w0, w1 := a.windows[0], a.windows[1]
	if w0.Counts[ClassOK] != 10 || w0.Sent != 10 || w0.Diverged || w0.Phase != "base" || w0.Partial {
		t.Errorf("window 0 = %+v", w0)
	}
	if w1.Counts[ClassOK] != 10 || w1.LagMax != 50*time.Millisecond || !w1.Diverged || w1.Phase != "fault" {
		t.Errorf("window 1 = %+v", w1)
	}
	if got := w1.LatencyIntended.Max; got != 51*time.Millisecond {
		t.Errorf("intended latency max = %v, want 51ms", got)
	}
	ps := a.phaseStats(int64(2*time.Second), []int64{20}, Config{})
	if len(ps) != 2 || !ps[0].Valid || ps[1].Valid || !hasRule(ps[1].Broken, rundata.RuleLag) {
		t.Errorf("phase stats = %+v", ps)
	}
}

func TestAggregatorPartialAndDropped(t *testing.T) {
	phases := []phaseSpan{{"only", 0, int64(2 * time.Second)}}
	a := testAgg(2*time.Second, 100*time.Millisecond, phases, 100)
	s := a.eps[0].sched.(schedule)
	// Only the first 150 of 200 requests were sent; request 3 never returns.
	for n := int64(0); n < 150; n++ {
		if n != 3 {
			a.add(sample{intended: s.at(n), actual: s.at(n), latency: 1000, class: ClassOK})
		}
	}
	a.flush(int64(2 * time.Second))
	if len(a.windows) != 20 {
		t.Fatalf("windows = %d, want 20", len(a.windows))
	}
	if !a.windows[0].Partial || a.windows[1].Partial || !a.windows[19].Partial {
		t.Errorf("partial flags: w0 %v w1 %v w19 %v", a.windows[0].Partial, a.windows[1].Partial, a.windows[19].Partial)
	}
	ps := a.phaseStats(int64(2*time.Second), []int64{150}, Config{})[0]
	if ps.Dropped != 50 || ps.Valid || ps.Sent != 149 {
		t.Errorf("phase = dropped %d sent %d valid %v reasons %v", ps.Dropped, ps.Sent, ps.Valid, ps.Broken)
	}
}

func TestAggregatorHarnessErrors(t *testing.T) {
	phases := []phaseSpan{{"only", 0, int64(10 * time.Second)}}
	for _, tt := range []struct {
		harness int
		valid   bool
	}{{0, true}, {1, false}} {
		a := testAgg(10*time.Second, time.Second, phases, 100)
		s := a.eps[0].sched.(schedule)
		for n := range int64(1000) {
			c, h := ClassOK, false
			if n < int64(tt.harness) {
				c, h = ClassTransportError, true
			}
			a.add(sample{intended: s.at(n), actual: s.at(n), latency: 1000, class: c, harness: h})
		}
		a.flush(int64(10 * time.Second))
		ps := a.phaseStats(int64(10*time.Second), []int64{1000}, Config{})[0]
		if ps.Valid != tt.valid || ps.HarnessErrors != int64(tt.harness) {
			t.Errorf("%d harness errors in 1000: valid %v reasons %v", tt.harness, ps.Valid, ps.Broken)
		}
	}
}

func TestAggregatorForcedClose(t *testing.T) {
	phases := []phaseSpan{{"only", 0, int64(5 * time.Second)}}
	a := testAgg(5*time.Second, 100*time.Millisecond, phases, 100) // maxOpen 8
	s := a.eps[0].sched.(schedule)
	// Request 0 is outstanding while 4 s of later results arrive.
	for n := int64(1); n < 400; n++ {
		a.add(sample{intended: s.at(n), actual: s.at(n), latency: 1000, class: ClassOK})
	}
	if open := len(a.eps[0].open); open > 8 {
		t.Errorf("%d windows open, cap 8", open)
	}
	a.add(sample{intended: 0, actual: 0, latency: int64(4 * time.Second), class: ClassOK})
	a.flush(int64(5 * time.Second))
	if a.eps[0].late != 1 || !a.windows[0].Partial || len(a.windows) != 50 {
		t.Errorf("late %d, w0 partial %v, windows %d", a.eps[0].late, a.windows[0].Partial, len(a.windows))
	}
	if ps := a.phaseStats(int64(5*time.Second), []int64{500}, Config{})[0]; ps.Counts[ClassOK] != 400 {
		t.Errorf("phase ok = %d, want 400 (late result kept)", ps.Counts[ClassOK])
	}
}

// TestAggregatorOverranBaseline: a request sent in the baseline's last
// moment and answered after it ended may have met the fault switched on at
// the boundary; its failure does not make the baseline unhealthy. The same
// failure answered within the baseline does, and so does a target whose
// every answer comes after the phase (it hangs: nothing to leave out).
func TestAggregatorOverranBaseline(t *testing.T) {
	const sec = int64(time.Second)
	phases := []phaseSpan{{"baseline", 0, 2 * sec}, {"fault", 2 * sec, 3 * sec}}
	cfg := Config{Health: &Health{Phases: []string{"baseline"}, MinSuccess: 0.99, MaxUnreachable: 0.01}}
	for _, tt := range []struct {
		name           string
		lastLatency    int64 // of the baseline's last request, a 502
		allLatency     int64 // of every other request, a 200
		valid          bool
		overran, count int64
	}{
		{"answered after the boundary", int64(2 * time.Millisecond), int64(time.Millisecond), true, 1, 80},
		{"answered within the baseline", int64(100 * time.Microsecond), int64(time.Millisecond), false, 0, 80},
		{"every answer after the phase", int64(5 * time.Second), int64(5 * time.Second), false, 80, 80},
	} {
		a := testAgg(3*time.Second, 250*time.Millisecond, phases, 40)
		s := a.eps[0].sched.(schedule)
		n := s.countBefore(2 * sec)
		for i := range s.countBefore(3 * sec) {
			c, lat := ClassOK, tt.allLatency
			if i == n-1 {
				c, lat = ClassDepError, tt.lastLatency
			}
			if tt.allLatency > sec && i != n-1 {
				c = ClassClientTimeout
			}
			// The last request is sent 0.2 ms before the boundary.
			at := s.at(i)
			if i == n-1 {
				at = 2*sec - int64(200*time.Microsecond)
			}
			a.add(sample{intended: at, actual: at, latency: lat, class: c})
		}
		a.flush(3 * sec)
		ps := a.phaseStats(3*sec, []int64{s.countBefore(3 * sec)}, cfg)[0]
		if ps.Valid != tt.valid || ps.Overran.Total() != tt.overran || ps.Counts.Total() != tt.count {
			t.Errorf("%s: valid %v (want %v), overran %d (want %d), counted %d (want %d); broken %+v",
				tt.name, ps.Valid, tt.valid, ps.Overran.Total(), tt.overran, ps.Counts.Total(), tt.count, ps.Broken)
		}
	}
}
