package shards

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/loadgen"
)

const testVersion = "test"

// testToken is the run's token of the tests' shards and fleets.
const testToken = "5a7e0c1d2b3f4a5968778695a4b3c2d1e0f1a2b3c4d5e6f708192a3b4c5d6e7f"

// target is a service answering ok after d, counting its requests; each
// answer says its time in a Server-Timing header.
func target(t *testing.T, d time.Duration, count *atomic.Int64) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		count.Add(1)
		time.Sleep(d)
		w.Header().Set("Server-Timing", `app;desc="sleep";dur=`+strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64))
		io.WriteString(w, "ok")
	}))
	t.Cleanup(s.Close)
	return s
}

// agents starts n shard agents on loopback; wrap, if set, wraps shard i's
// handler.
func agents(t *testing.T, n int, wrap func(i int, h http.Handler) http.Handler) *Fleet {
	t.Helper()
	f := &Fleet{Version: testVersion, Token: testToken}
	for i := range n {
		a := &Agent{Version: testVersion, Index: i, Token: testToken}
		h := a.Handler()
		if wrap != nil {
			h = wrap(i, h)
		}
		s := httptest.NewServer(h)
		t.Cleanup(s.Close)
		f.Endpoints = append(f.Endpoints, Endpoint{Name: "shard-" + string(rune('0'+i)), URL: s.URL})
	}
	return f
}

func config(url string) loadgen.Config {
	return loadgen.Config{
		Targets: []loadgen.Target{{Name: "a", URL: url + "/a", Rate: 200}, {Name: "b", URL: url + "/b", Rate: 60}},
		Phases: []loadgen.Phase{{Name: "baseline", Duration: 600 * time.Millisecond},
			{Name: "fault", Duration: 400 * time.Millisecond, Rates: map[string]float64{"a": 400}}},
		Window: 200 * time.Millisecond, Timeout: 2 * time.Second, LagThreshold: 50 * time.Millisecond,
		Arrivals: loadgen.Arrivals{Offset: true, Seed: 5},
	}
}

// TestFleetMergesExactly: four shard processes' results, merged, are the
// load of one generator: every scheduled request sent and answered once,
// the same expected counts per phase and window, no partial window, valid.
func TestFleetMergesExactly(t *testing.T) {
	var hits atomic.Int64
	srv := target(t, time.Millisecond, &hits)
	single, err := loadgen.Run(context.Background(), config(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	singleHits := hits.Swap(0)

	cfg := config(srv.URL)
	var raw strings.Builder
	cfg.Raw = map[string]io.Writer{"a": &raw}
	cfg.Remote = agents(t, 4, nil)
	rep, err := loadgen.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := hits.Load(); got != singleHits {
		t.Errorf("the shards sent %d requests, one generator %d", got, singleHits)
	}
	if len(rep.Phases) != len(single.Phases) || len(rep.Windows) != len(single.Windows) {
		t.Fatalf("%d phases, %d windows; one generator %d, %d", len(rep.Phases), len(rep.Windows), len(single.Phases), len(single.Windows))
	}
	for i, ps := range rep.Phases {
		one := single.Phases[i]
		// Sent counts actual send times in the phase: a request sent late
		// may cross a boundary, in either run.
		if ps.Expected != one.Expected || ps.Counts.Total() != one.Expected || ps.Counts[loadgen.ClassOK] != ps.Expected || abs(ps.Sent-one.Sent) > 2 {
			t.Errorf("%s/%s: expected %d total %d ok %d sent %d; one generator expected %d sent %d",
				ps.Endpoint, ps.Phase, ps.Expected, ps.Counts.Total(), ps.Counts[loadgen.ClassOK], ps.Sent, one.Expected, one.Sent)
		}
		for _, b := range ps.Broken {
			// A shard rule is the merge's; lag or rate alone is the
			// machine's (TestFleetSkewedClock).
			if b.Rule.Shard() || b.Rule == rundata.RuleUnsent {
				t.Errorf("%s/%s: %s broken: %+v", ps.Endpoint, ps.Phase, b.Rule, b)
			} else {
				t.Logf("%s/%s: %s broken (the machine's noise): %+v", ps.Endpoint, ps.Phase, b.Rule, b)
			}
		}
		// The shards' batches carry every answer's Server-Timing.
		app, _ := ps.ServerTiming.Metric("app")
		if st := ps.ServerTiming; st == nil || st.With != ps.Counts.Total() || app.Dur.Count != st.With || app.Desc != "sleep" || app.Dur.P50 < time.Millisecond*99/100 {
			t.Errorf("%s/%s: Server-Timing %+v of %d results, want app (sleep, 1 ms) in every one", ps.Endpoint, ps.Phase, st, ps.Counts.Total())
		}
	}
	for _, w := range rep.Windows {
		if w.Partial || w.Counts.Total() != w.Expected {
			t.Errorf("window %s/%d: received %d of %d", w.Endpoint, w.Index, w.Counts.Total(), w.Expected)
		}
	}
	if len(rep.Shards) != 4 {
		t.Fatalf("%d shard records, want 4", len(rep.Shards))
	}
	var sent int64
	for _, st := range rep.Shards {
		sent += st.Sent
		if st.Error != "" || st.OffsetError > 10*time.Millisecond {
			t.Errorf("shard %d: %+v", st.Index, st)
		}
	}
	if sent != singleHits {
		t.Errorf("shards' sent sum %d, want %d", sent, singleHits)
	}
	if n := strings.Count(raw.String(), "a"); n == 0 {
		t.Error("no raw results written")
	}
}

// TestFleetSkewedClock: a shard whose clock is an hour off starts with
// the others: its offset is measured and its t0 given in its own time.
func TestFleetSkewedClock(t *testing.T) {
	var hits atomic.Int64
	srv := target(t, 0, &hits)
	f := &Fleet{Version: testVersion}
	for i, skew := range []time.Duration{0, time.Hour} {
		a := &Agent{Version: testVersion, Index: i, Now: func() time.Time { return time.Now().Add(skew) }}
		s := httptest.NewServer(a.Handler())
		t.Cleanup(s.Close)
		f.Endpoints = append(f.Endpoints, Endpoint{URL: s.URL})
	}
	cfg := config(srv.URL)
	cfg.Remote = f
	rep, err := loadgen.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if off := rep.Shards[1].Offset; off < time.Hour-time.Second || off > time.Hour+time.Second {
		t.Errorf("shard 1's offset %v, want about an hour", off)
	}
	// A clock an hour off, mishandled, starts the shard an hour early or
	// late: a shard rule breaks (late, clock) or its requests go unsent.
	// A lag or rate rule alone is the machine's (the race detector, other
	// packages' tests on two cores), not the clock's.
	for _, p := range rep.Phases {
		for _, b := range p.Broken {
			if b.Rule.Shard() || b.Rule == rundata.RuleUnsent {
				t.Errorf("phase %s: %s broken: %+v", p.Phase, b.Rule, b)
			} else {
				t.Logf("phase %s: %s broken (the machine's noise): %+v", p.Phase, b.Rule, b)
			}
		}
	}
}

// TestFleetLateShardInvalid: a shard whose start arrives after t0 (a slow
// pod) makes the run INVALID, naming it.
func TestFleetLateShardInvalid(t *testing.T) {
	var hits atomic.Int64
	srv := target(t, 0, &hits)
	cfg := config(srv.URL)
	cfg.Remote = agents(t, 3, func(i int, h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if i == 2 && r.URL.Path == "/start" {
				time.Sleep(DefaultLead + 200*time.Millisecond)
			}
			h.ServeHTTP(w, r)
		})
	})
	rep, err := loadgen.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Valid || !broke(rep, func(b rundata.Broken) bool { return b.Rule == rundata.RuleShardLate && *b.Shard == 2 }) {
		t.Errorf("valid %v, broken %+v: want INVALID naming shard 2 late", rep.Valid, rep.Phases[0].Broken)
	}
}

// TestFleetStalledShardInvalid: a shard that goes silent mid-run (a
// stream held open, nothing on it) fails after Stall, and the run is
// INVALID, naming it; the others' results are still merged.
func TestFleetStalledShardInvalid(t *testing.T) {
	var hits atomic.Int64
	srv := target(t, 0, &hits)
	cfg := config(srv.URL)
	f := agents(t, 2, func(i int, h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if i == 1 && r.URL.Path == "/start" {
				w.WriteHeader(http.StatusOK)
				w.(http.Flusher).Flush()
				<-r.Context().Done()
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	f.Stall = 300 * time.Millisecond
	cfg.Remote = f
	rep, err := loadgen.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Valid || !broke(rep, func(b rundata.Broken) bool {
		return b.Rule == rundata.RuleShardFailed && *b.Shard == 1 && strings.Contains(b.Error, "it sent nothing for 300ms")
	}) {
		t.Errorf("valid %v, broken %+v: want INVALID naming shard 1 failed", rep.Valid, rep.Phases[0].Broken)
	}
	if rep.Shards[0].Error != "" || rep.Shards[0].Samples == 0 {
		t.Errorf("shard 0: %+v", rep.Shards[0])
	}
}

// TestFleetNotReleased: a shard that cannot be armed (another version)
// stops the run before any load, with an error naming it.
func TestFleetNotReleased(t *testing.T) {
	var hits atomic.Int64
	srv := target(t, 0, &hits)
	f := agents(t, 2, nil)
	other := &Agent{Version: "other", Index: 2}
	s := httptest.NewServer(other.Handler())
	t.Cleanup(s.Close)
	f.Endpoints = append(f.Endpoints, Endpoint{Name: "shard-2", URL: s.URL})
	cfg := config(srv.URL)
	cfg.Remote = f
	_, err := loadgen.Run(context.Background(), cfg)
	if !errors.Is(err, loadgen.ErrShards) || !strings.Contains(err.Error(), `shard 2 (shard-2): it is version "other"`) {
		t.Errorf("err = %v", err)
	}
	if hits.Load() != 0 {
		t.Errorf("%d requests sent", hits.Load())
	}
}

// TestAgentRefusesRemoteTargets: without AllowRemote, a shard loads
// loopback only.
func TestAgentRefusesRemoteTargets(t *testing.T) {
	f := agents(t, 1, nil)
	cfg := config("http://192.0.2.1:80")
	cfg.Remote = f
	_, err := loadgen.Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "targets[0]") {
		t.Errorf("err = %v", err)
	}
}

// broke reports whether a phase of rep broke a rule as is describes.
func broke(rep *loadgen.Report, is func(rundata.Broken) bool) bool {
	for _, ps := range rep.Phases {
		if slices.ContainsFunc(ps.Broken, is) {
			return true
		}
	}
	return false
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
