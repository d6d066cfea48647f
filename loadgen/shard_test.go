package loadgen

import (
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// shardTimes is every intended send of target ti over the shards of cfg
// split n ways, sorted.
func shardTimes(t *testing.T, cfg Config, n, ti int) []int64 {
	t.Helper()
	var all []int64
	for _, sc := range Shards(cfg, n) {
		p, err := sc.validate()
		if err != nil {
			t.Fatal(err)
		}
		s := p.schedules[ti]
		for k := range s.total {
			all = append(all, s.at(k))
		}
	}
	slices.Sort(all)
	return all
}

// TestShardsInterleaveConstant: N shards of a constant schedule send
// exactly the requests of the unsharded one (rate changes and a seeded
// phase offset included), each within a nanosecond of rounding.
func TestShardsInterleaveConstant(t *testing.T) {
	cfg := Config{
		Targets: []Target{{Name: "a", URL: "http://127.0.0.1:1/a", Rate: 300}, {Name: "b", URL: "http://127.0.0.1:1/b", Rate: 77}},
		Phases: []Phase{{Name: "warmup", Duration: 700 * time.Millisecond}, {Name: "fault", Duration: time.Second, Rates: map[string]float64{"a": 1000, "b": 0}},
			{Name: "recovery", Duration: 1300 * time.Millisecond}},
		Arrivals: Arrivals{Offset: true, Seed: 42},
	}
	for ti := range cfg.Targets {
		want := shardTimes(t, cfg, 1, ti)
		for _, n := range []int{2, 3, 4, 7} {
			got := shardTimes(t, cfg, n, ti)
			if len(got) != len(want) {
				t.Fatalf("target %d, %d shards: %d requests, want %d", ti, n, len(got), len(want))
			}
			for k := range got {
				if d := got[k] - want[k]; d < -2 || d > 2 {
					t.Fatalf("target %d, %d shards: request %d at %d, want %d", ti, n, k, got[k], want[k])
				}
			}
		}
	}
}

// TestShardsPoisson: Poisson shards are independent streams (no two
// alike) whose sum has the full rate's count, within 5 sigma.
func TestShardsPoisson(t *testing.T) {
	cfg := Config{Targets: []Target{{Name: "a", URL: "http://127.0.0.1:1/a", Rate: 2000}},
		Phases: []Phase{{Name: "p", Duration: 5 * time.Second}}, Arrivals: Arrivals{Process: ArrivalsPoisson, Seed: 3}}
	var firsts []int64
	total := 0
	for _, sc := range Shards(cfg, 4) {
		p, err := sc.validate()
		if err != nil {
			t.Fatal(err)
		}
		firsts = append(firsts, p.schedules[0].at(0))
		total += int(p.schedules[0].total)
	}
	slices.Sort(firsts)
	if len(slices.Compact(firsts)) != 4 {
		t.Errorf("shards' first arrivals %v: not independent streams", firsts)
	}
	if want := 10000.0; math.Abs(float64(total)-want) > 5*math.Sqrt(want) {
		t.Errorf("sum of the shards: %d requests, want about %v", total, want)
	}
}

// TestShardValidate: a shard index out of range is refused, naming it.
func TestShardValidate(t *testing.T) {
	cfg := Config{Targets: []Target{{Name: "a", URL: "http://127.0.0.1:1/a", Rate: 10}}, Phases: []Phase{{Name: "p", Duration: time.Second}}}
	for _, sh := range []Shard{{Index: 4, Count: 4}, {Index: -1, Count: 2}, {Index: 1}, {Count: MaxShards + 1}} {
		cfg.Shard = sh
		if _, err := cfg.validate(); err == nil {
			t.Errorf("shard %+v: no error", sh)
		}
	}
}

// TestBatchRoundTrip: every field of a sample survives a batch.
func TestBatchRoundTrip(t *testing.T) {
	in := []sample{
		{intended: 5, actual: 7, latency: 1e6, ep: 1, code: 200, class: ClassOK, seq: 9, bytesIn: 2, bytesOut: 3},
		{intended: -3, actual: 0, latency: 0, ep: 0, code: 0, class: ClassTransportError, harness: true, errText: "dial tcp: refused"},
		{intended: 40, ep: 1, retry: rundata.RetryCounts{Attempts: 2, Retries: 1}},
		{intended: 41, actual: 45, latency: 3, ep: 1, code: 504, class: ClassClientTimeout, cancelled: true},
		{intended: 50, actual: 51, latency: 90e6, ep: 0, code: 503, class: ClassRejected, stSeen: true, stBad: 2, stDropped: 1,
			timing: []TimingEntry{{Name: "pool", Desc: "wait", Dur: 85200 * time.Microsecond}, {Name: "db", Dur: 10800 * time.Microsecond}}},
		{intended: 52, actual: 53, latency: 1e6, ep: 0, code: 200, class: ClassOK, stSeen: true},
	}
	b := appendBatch(nil, 1234, in)
	wm, out, err := decodeBatch(b, 2, nil)
	if err != nil || wm != 1234 || !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip: wm %d err %v\n got %+v\nwant %+v", wm, err, out, in)
	}
	if _, _, err := decodeBatch(b, 1, nil); err == nil {
		t.Error("a target index beyond the config's decoded")
	}
	for cut := range len(b) {
		if _, _, err := decodeBatch(b[:cut], 2, nil); err == nil {
			t.Errorf("batch cut at %d of %d decoded", cut, len(b))
		}
	}
}

func FuzzDecodeBatch(f *testing.F) {
	f.Add(appendBatch(nil, 7, []sample{{intended: 1, actual: 2, latency: 3, ep: 0, code: 200, errText: "x"}}))
	f.Add(appendBatch(nil, 7, []sample{{intended: 1, ep: 0, code: 200, stSeen: true, timing: []TimingEntry{{Name: "db", Desc: "q", Dur: 5}}}}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		wm, ss, err := decodeBatch(b, 3, nil)
		if err != nil {
			return
		}
		// What decodes encodes back to the same batch.
		if again := appendBatch(nil, wm, ss); !slices.Equal(again, b) {
			_, ss2, err := decodeBatch(again, 3, nil)
			if err != nil || !reflect.DeepEqual(ss, ss2) {
				t.Fatalf("re-encoded batch decodes differently: %v", err)
			}
		}
	})
}

// TestJudgeShards: a shard whose requests were late in more than 1 % of a
// judged phase makes every judged phase INVALID, naming it; late in a
// phase excluded from validity (a warmup), or in under 1 %, it does not.
func TestJudgeShards(t *testing.T) {
	p := &plan{lag: 5 * time.Millisecond, cfg: Config{ExcludeFromValidity: []string{"warmup"}}}
	for _, tc := range []struct {
		late  []rundata.PhaseShare
		valid bool
	}{
		{[]rundata.PhaseShare{{Phase: "warmup", Share: 0.3}, {Phase: "baseline", Share: 0.005}}, true},
		{[]rundata.PhaseShare{{Phase: "baseline", Share: 0.02}}, false},
	} {
		rep := &Report{Phases: []PhaseStats{{Phase: "warmup", Excluded: true, Valid: true}, {Phase: "baseline", Valid: true}},
			Shards: []ShardStats{{Index: 0}, {Index: 1, LateShare: tc.late}}}
		judgeShards(rep, p, true)
		if rep.Phases[1].Valid != tc.valid || !rep.Phases[0].Valid {
			t.Errorf("late %+v: baseline valid %v (want %v), warmup valid %v; reasons %v", tc.late, rep.Phases[1].Valid, tc.valid, rep.Phases[0].Valid, rep.Phases[1].Broken)
		}
		if !tc.valid && !shardBroke(rep.Phases[1].Broken, rundata.RuleShardLag, 1) {
			t.Errorf("broken %+v do not name shard 1's lag", rep.Phases[1].Broken)
		}
	}
}

// TestJudgeShardsClock: a shard's clock known within a quarter window
// (more than the lag threshold, as through a cluster's API server) is
// good enough; beyond it the run is INVALID, naming the shard.
func TestJudgeShardsClock(t *testing.T) {
	p := &plan{lag: 5 * time.Millisecond, window: 250 * time.Millisecond}
	for _, tc := range []struct {
		err   time.Duration
		valid bool
	}{{20 * time.Millisecond, true}, {62 * time.Millisecond, true}, {80 * time.Millisecond, false}} {
		rep := &Report{Phases: []PhaseStats{{Phase: "baseline", Valid: true}}, Shards: []ShardStats{{Index: 3, OffsetError: tc.err}}}
		judgeShards(rep, p, true)
		if rep.Phases[0].Valid != tc.valid {
			t.Errorf("offset error %v: valid %v, want %v (%v)", tc.err, rep.Phases[0].Valid, tc.valid, rep.Phases[0].Broken)
		}
		if !tc.valid && !shardBroke(rep.Phases[0].Broken, rundata.RuleShardClock, 3) {
			t.Errorf("broken %+v do not name shard 3's clock", rep.Phases[0].Broken)
		}
	}
}
