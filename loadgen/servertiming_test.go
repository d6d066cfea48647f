package loadgen

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

func ms(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }

// TestParseServerTiming: the specification's examples, its lenient corners
// (case, repeats, spaces, empty elements, several headers) and malformed
// entries, each skipped and counted while the rest of the header is read.
func TestParseServerTiming(t *testing.T) {
	for _, tt := range []struct {
		name    string
		values  []string
		want    []TimingEntry
		bad     int
		dropped int
	}{
		{"specification example", []string{`db;dur=53, pool;desc="wait";dur=85.2, cache;desc="Cache Read";dur=23.2`},
			[]TimingEntry{{"db", "", ms(53)}, {"pool", "wait", ms(85.2)}, {"cache", "Cache Read", ms(23.2)}}, 0, 0},
		{"several headers", []string{"pool;dur=85", "db;dur=10.8"}, []TimingEntry{{"pool", "", ms(85)}, {"db", "", ms(10.8)}}, 0, 0},
		{"no dur is no time", []string{`miss, cache;desc="hit", db;dur=1`}, []TimingEntry{{"db", "", ms(1)}}, 0, 0},
		{"spaces, tabs, case, first dur wins", []string{" db ;\tDUR = 2 ; dur=9 ;Desc=q ; desc=r ,"}, []TimingEntry{{"db", "q", ms(2)}}, 0, 0},
		{"empty elements", []string{",, ,db;dur=0,,"}, []TimingEntry{{"db", "", 0}}, 0, 0},
		{"quoted comma and escapes", []string{`a;desc="x, \"y\"";dur=1,b;dur=2`}, []TimingEntry{{"a", `x, "y"`, ms(1)}, {"b", "", ms(2)}}, 0, 0},
		{"param without value", []string{"a;flag;dur=3"}, []TimingEntry{{"a", "", ms(3)}}, 0, 0},
		{"exponent", []string{"a;dur=1e1"}, []TimingEntry{{"a", "", ms(10)}}, 0, 0},
		{"empty", []string{"", "   "}, nil, 0, 0},
		{"bad dur", []string{"a;dur=x, b;dur=-1, c;dur=NaN, d;dur=Inf, e;dur=, f;dur=4"}, []TimingEntry{{"f", "", ms(4)}}, 5, 0},
		{"bad name", []string{`;dur=1, "q";dur=2, =3, g;dur=5`}, []TimingEntry{{"g", "", ms(5)}}, 3, 0},
		{"garbage after a value", []string{"a;dur=1 x, b;dur=2"}, []TimingEntry{{"b", "", ms(2)}}, 1, 0},
		{"unterminated quote", []string{`a;dur=1, b;desc="open, c;dur=3`}, []TimingEntry{{"a", "", ms(1)}}, 1, 0},
		{"a bad header beside a good one", []string{`x;desc="`, "db;dur=7"}, []TimingEntry{{"db", "", ms(7)}}, 1, 0},
		{"long name", []string{strings.Repeat("n", rundata.MaxTimingText+1) + ";dur=1"}, nil, 1, 0},
		{"huge dur", []string{"a;dur=1e300"}, []TimingEntry{{"a", "", MaxTimingDur}}, 0, 0},
		{"too many", []string{strings.Repeat("m;dur=1,", rundata.MaxTimingEntries+3)}, nil, 0, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, bad, dropped := ParseServerTiming(tt.values)
			if tt.name == "too many" {
				if len(got) != rundata.MaxTimingEntries {
					t.Errorf("%d entries, want %d", len(got), rundata.MaxTimingEntries)
				}
				got = nil
			}
			if !reflect.DeepEqual(got, tt.want) || bad != tt.bad || dropped != tt.dropped {
				t.Errorf("ParseServerTiming(%q) =\n %+v, bad %d, dropped %d\nwant\n %+v, bad %d, dropped %d", tt.values, got, bad, dropped, tt.want, tt.bad, tt.dropped)
			}
		})
	}
}

// TestDefaultTimingRole: the words that make a metric a wait, in its name
// or its description, "total" left out, everything else work; a declared
// role wins.
func TestDefaultTimingRole(t *testing.T) {
	for _, tt := range []struct{ name, desc, want string }{
		{"pool", "", rundata.TimingWait}, {"db", "wait", rundata.TimingWait}, {"QueueTime", "", rundata.TimingWait},
		{"acq", "Connection acquire", rundata.TimingWait}, {"db", "query", rundata.TimingWork}, {"render", "", rundata.TimingWork},
		{"total", "", rundata.TimingIgnore}, {"Total", "", rundata.TimingIgnore},
	} {
		if got := rundata.DefaultTimingRole(tt.name, tt.desc); got != tt.want {
			t.Errorf("DefaultTimingRole(%q, %q) = %s, want %s", tt.name, tt.desc, got, tt.want)
		}
	}
	r := &rundata.TimingRoles{Wait: []string{"lock"}, Work: []string{"pool"}, Ignore: []string{"app"}}
	for name, want := range map[string]string{"lock": rundata.TimingWait, "pool": rundata.TimingWork, "app": rundata.TimingIgnore, "queue": rundata.TimingWait} {
		if got := r.RoleOf(name, ""); got != want {
			t.Errorf("RoleOf(%q) = %s, want %s", name, got, want)
		}
	}
}

// FuzzParseServerTiming: whatever a service sends, the parser returns at
// most MaxTimingEntries entries, each a token name of at most MaxTimingText
// bytes, a valid UTF-8 description of at most MaxTimingText bytes and a dur
// in [0, MaxTimingDur], and counts that are not negative; splitting the
// value at a comma outside quotes into two headers changes nothing.
func FuzzParseServerTiming(f *testing.F) {
	for _, s := range []string{`db;dur=53, pool;desc="wait";dur=85.2, cache;desc="Cache Read";dur=23.2`,
		`a;desc="x, \"y\"";dur=1,b;dur=2`, `x;desc="`, ";;,,=", "a;dur=1e400", "a;dur=0x1p3", "\xff;dur=1", `a;desc="\xff\xfe";dur=1`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		es, bad, dropped := ParseServerTiming([]string{s})
		if bad < 0 || dropped < 0 || len(es) > rundata.MaxTimingEntries {
			t.Fatalf("%d entries, bad %d, dropped %d", len(es), bad, dropped)
		}
		for _, e := range es {
			p := timingParser{s: e.Name}
			if p.token() != e.Name || e.Name == "" || len(e.Name) > rundata.MaxTimingText {
				t.Fatalf("name %q is no token of at most %d bytes", e.Name, rundata.MaxTimingText)
			}
			if !utf8.ValidString(e.Desc) || len(e.Desc) > rundata.MaxTimingText {
				t.Fatalf("desc %q: invalid or longer than %d bytes", e.Desc, rundata.MaxTimingText)
			}
			if e.Dur < 0 || e.Dur > MaxTimingDur {
				t.Fatalf("dur %v out of [0, %v]", e.Dur, MaxTimingDur)
			}
		}
		// Two headers are one list: split at the first comma outside
		// quotes (and escapes), the result is the same.
		if i := topComma(s); i >= 0 {
			es2, bad2, dropped2 := ParseServerTiming([]string{s[:i], s[i+1:]})
			if !reflect.DeepEqual(es, es2) || bad != bad2 || dropped != dropped2 {
				t.Fatalf("split at %d: %+v %d %d, whole: %+v %d %d", i, es2, bad2, dropped2, es, bad, dropped)
			}
		}
	})
}

// topComma is the index of s's first comma outside a quoted string, or -1.
func topComma(s string) int {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			return i
		}
	}
	return -1
}

// TestRunRecordsServerTiming: a loopback service answers /a with
// Server-Timing (pool and db; in the second phase the pool's wait grows, a
// quarter of the answers 503 still carry the header and every tenth
// answer has none or a malformed one) and /b without it. The phase records
// hold the distributions per metric, the with/without and bad counts, and
// /b none.
func TestRunRecordsServerTiming(t *testing.T) {
	var phase2 atomic.Bool
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/b" {
			return
		}
		i := n.Add(1)
		pool := 1.0
		if phase2.Load() {
			pool = 40
		}
		switch {
		case i%10 == 0:
			// no header
		case i%10 == 5:
			w.Header().Add("Server-Timing", `pool;dur=oops`)
			w.Header().Add("Server-Timing", fmt.Sprintf("db;dur=%g", 10.8))
		default:
			w.Header().Set("Server-Timing", fmt.Sprintf(`pool;desc="wait";dur=%g, db;dur=%g, miss`, pool, 10.8))
		}
		if i%4 == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	cfg := Config{
		Targets: []Target{{Name: "a", URL: srv.URL + "/a", Rate: 200}, {Name: "b", URL: srv.URL + "/b", Rate: 50}},
		Phases:  []Phase{{Name: "one", Duration: 500 * time.Millisecond}, {Name: "two", Duration: 500 * time.Millisecond}},
		Window:  250 * time.Millisecond, Timeout: 2 * time.Second, LagThreshold: 50 * time.Millisecond,
		OnPhase: func(p Phase, _ time.Time) { phase2.Store(p.Name == "two") },
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, ps := range rep.Phases {
		st := ps.ServerTiming
		if ps.Endpoint == "b" {
			if st != nil {
				t.Errorf("/b %s: %+v, want no record (it sent no header)", ps.Phase, st)
			}
			continue
		}
		if st == nil {
			t.Fatalf("/a %s: no Server-Timing record", ps.Phase)
		}
		total := ps.Counts.Total()
		if st.With+st.Without != total || st.Without < total/20 || st.Without > total/5 {
			t.Errorf("/a %s: with %d + without %d, of %d results: want every result, about a tenth without", ps.Phase, st.With, st.Without, total)
		}
		if st.Bad < total/20 || st.Bad > total/5 {
			t.Errorf("/a %s: %d bad entries of %d results, want about a tenth", ps.Phase, st.Bad, total)
		}
		pool, ok1 := st.Metric("pool")
		db, ok2 := st.Metric("db")
		if !ok1 || !ok2 || len(st.Metrics) != 2 || pool.Desc != "wait" {
			t.Fatalf("/a %s: metrics %+v, want pool (wait) and db", ps.Phase, st.Metrics)
		}
		if db.Dur.Count != st.With || pool.Dur.Count+st.Bad != st.With {
			t.Errorf("/a %s: db %d and pool %d values (+%d bad) of %d headers", ps.Phase, db.Dur.Count, pool.Dur.Count, st.Bad, st.With)
		}
		wantPool := ms(1)
		if ps.Phase == "two" {
			wantPool = ms(40)
		}
		// 2 significant digits: within 1 %; the phase switch is seen a
		// moment late by the server, so the p50, not the mean.
		if d := pool.Dur.P50 - wantPool; d < -wantPool/100 || d > wantPool/100 {
			t.Errorf("/a %s: pool p50 %v, want %v", ps.Phase, pool.Dur.P50, wantPool)
		}
		if d := db.Dur.P99 - ms(10.8); d < -ms(0.11) || d > ms(0.11) || db.Dur.Mean != ms(10.8) {
			t.Errorf("/a %s: db p99 %v mean %v, want 10.8 ms", ps.Phase, db.Dur.P99, db.Dur.Mean)
		}
	}
}

// TestTimingAggBounded: a service that sends a new metric name with every
// response gets MaxTimingMetrics histograms, the rest counted as dropped.
func TestTimingAggBounded(t *testing.T) {
	var a timingAgg
	for i := range 1000 {
		a.add(&sample{stSeen: true, timing: []TimingEntry{{Name: fmt.Sprint("m", i), Dur: ms(1)}}})
	}
	st := a.record()
	if len(st.Metrics) != rundata.MaxTimingMetrics || st.Dropped != 1000-rundata.MaxTimingMetrics || st.With != 1000 {
		t.Errorf("%d metrics, %d dropped, %d with; want %d, %d, 1000", len(st.Metrics), st.Dropped, st.With, rundata.MaxTimingMetrics, 1000-rundata.MaxTimingMetrics)
	}
	var none timingAgg
	none.add(&sample{})
	if none.record() != nil {
		t.Error("a phase without any header has a record")
	}
}
