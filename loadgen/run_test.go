package loadgen

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

func okServer(t *testing.T) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	t.Cleanup(s.Close)
	return s
}

// TestRunExactCounts: short runs at known rates send exactly rate × duration
// requests per phase, all ok, valid, with the raw file readable by vegeta.
func TestRunExactCounts(t *testing.T) {
	srv := okServer(t)
	var rawA, rawB bytes.Buffer
	var mu sync.Mutex
	var phases []string
	cfg := Config{
		Targets: []Target{{Name: "a", URL: srv.URL + "/a", Rate: 100}, {Name: "b", URL: srv.URL + "/b", Rate: 50}},
		Phases:  []Phase{{Name: "baseline", Duration: 600 * time.Millisecond}, {Name: "fault", Duration: 400 * time.Millisecond}},
		Window:  200 * time.Millisecond, Timeout: 2 * time.Second, LagThreshold: 50 * time.Millisecond,
		Raw:     map[string]io.Writer{"a": &rawA, "b": &rawB},
		OnPhase: func(p Phase, _ time.Time) { mu.Lock(); phases = append(phases, p.Name); mu.Unlock() },
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"a/baseline": 60, "a/fault": 40, "b/baseline": 30, "b/fault": 20}
	for _, ps := range rep.Phases {
		key := ps.Endpoint + "/" + ps.Phase
		if got := ps.Counts[ClassOK]; got != want[key] || ps.Counts.Total() != want[key] || ps.Expected != want[key] {
			t.Errorf("%s: ok=%d total=%d expected=%d, want %d", key, got, ps.Counts.Total(), ps.Expected, want[key])
		}
		if !ps.Valid {
			t.Logf("%s invalid (machine noise?): %v", key, ps.Broken)
		}
	}
	if len(rep.Phases) != 4 {
		t.Errorf("phases = %d, want 4", len(rep.Phases))
	}
	if len(rep.Windows) != 10 {
		t.Errorf("windows = %d, want 5 per endpoint", len(rep.Windows))
	}
	for _, w := range rep.Windows {
		if w.Counts.Total() != w.Expected || w.Partial {
			t.Errorf("window %s/%d: total %d expected %d partial %v", w.Endpoint, w.Index, w.Counts.Total(), w.Expected, w.Partial)
		}
	}
	if strings.Join(phases, ",") != "baseline,fault" {
		t.Errorf("OnPhase calls = %v", phases)
	}
	for name, buf := range map[string]*bytes.Buffer{"a": &rawA, "b": &rawB} {
		dec := vegeta.NewDecoder(buf)
		n := 0
		for {
			var r vegeta.Result
			if err := dec.Decode(&r); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("raw %s: decode: %v", name, err)
			}
			if r.Attack != name || r.Code != 200 || len(r.Body) != 0 {
				t.Errorf("raw %s: result %+v", name, r)
			}
			n++
		}
		if want := map[string]int{"a": 100, "b": 50}[name]; n != want {
			t.Errorf("raw %s: %d results, want %d", name, n, want)
		}
	}
}

func refusedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/"
}

// classServer answers by path with each outcome of docs/design.md §4.
func classServer(t *testing.T) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			io.WriteString(w, "ok")
		case "/rejected":
			w.Header().Set("X-Bulkhead-Reject", "full")
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/dep_timeout":
			w.Header().Set("X-Dependency-Error", "timeout")
			w.WriteHeader(http.StatusGatewayTimeout)
		case "/dep_error":
			w.Header().Set("X-Dependency-Error", "error")
			w.WriteHeader(http.StatusBadGateway)
		case "/circuit_open":
			w.Header().Set("X-Circuit-Open", "a")
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/limited":
			w.Header().Set("X-Concurrency-Limit", "exceeded")
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/hang":
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		default:
			w.WriteHeader(http.StatusTeapot)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func TestRunClassifiesEveryClass(t *testing.T) {
	srv := classServer(t)
	urls := map[Class]string{
		ClassOK: srv.URL + "/ok", ClassRejected: srv.URL + "/rejected", ClassDepTimeout: srv.URL + "/dep_timeout",
		ClassDepError: srv.URL + "/dep_error", ClassClientTimeout: srv.URL + "/hang",
		ClassTransportError: refusedURL(t), ClassOther: srv.URL + "/teapot",
		ClassCircuitOpen: srv.URL + "/circuit_open", ClassLimited: srv.URL + "/limited",
	}
	var cfg Config
	for c := range NumClasses {
		cfg.Targets = append(cfg.Targets, Target{Name: c.String(), URL: urls[c], Rate: 20})
	}
	cfg.Phases = []Phase{{Name: "only", Duration: 500 * time.Millisecond}}
	cfg.Timeout = 300 * time.Millisecond
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, ps := range rep.Phases {
		c, _ := ParseClass(ps.Endpoint)
		if ps.Counts[c] != 10 || ps.Counts.Total() != 10 {
			t.Errorf("target %s (%s): counts %v, want 10 × %s", ps.Endpoint, urls[c], ps.Counts, c)
		}
		if _, ok := ps.ByClass[c.String()]; !ok {
			t.Errorf("target %s: no latency for its class in %v", ps.Endpoint, ps.ByClass)
		}
		if ps.HarnessErrors != 0 {
			t.Errorf("target %s: %d harness errors", ps.Endpoint, ps.HarnessErrors)
		}
	}
}

// TestRunOpenModel: a server that never answers within the timeout does not
// slow the send schedule.
func TestRunOpenModel(t *testing.T) {
	srv := classServer(t)
	cfg := Config{
		Targets: []Target{{Name: "hang", URL: srv.URL + "/hang", Rate: 200}},
		Phases:  []Phase{{Name: "p1", Duration: 500 * time.Millisecond}, {Name: "p2", Duration: 500 * time.Millisecond}},
		Window:  100 * time.Millisecond, Timeout: 400 * time.Millisecond,
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, ps := range rep.Phases {
		if ps.Counts[ClassClientTimeout] != 100 || ps.Dropped != 0 {
			t.Errorf("%s: counts %v dropped %d, want 100 client timeouts", ps.Phase, ps.Counts, ps.Dropped)
		}
		t.Logf("%s: sent %d/%d lag p99 %v max %v", ps.Phase, ps.Sent, ps.Expected, ps.LagP99, ps.LagMax)
		// Generous bounds: the machine is shared. A closed model would send
		// a handful, with lag in hundreds of milliseconds.
		if ps.Sent < 95 || ps.LagP99 > 40*time.Millisecond {
			t.Errorf("%s: sent %d of %d, lag p99 %v: the schedule slowed down", ps.Phase, ps.Sent, ps.Expected, ps.LagP99)
		}
	}
	for _, w := range rep.Windows {
		if w.Sent < 15 {
			t.Errorf("window %d: only %d sends, want ~20", w.Index, w.Sent)
		}
	}
}

// TestRunStarvedIsInvalid: a worker cap turns the model closed; validity
// must notice and say why.
func TestRunStarvedIsInvalid(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
	}))
	defer srv.Close()
	cfg := Config{
		Targets:    []Target{{Name: "a", URL: srv.URL, Rate: 200}},
		Phases:     []Phase{{Name: "only", Duration: 500 * time.Millisecond}},
		MaxWorkers: 1, Timeout: time.Second,
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ps := rep.Phases[0]
	if rep.Valid || ps.Valid {
		t.Fatalf("starved run judged valid: %+v", ps)
	}
	for _, want := range []rundata.Rule{rundata.RuleRate, rundata.RuleLag, rundata.RuleUnsent} {
		if !hasRule(ps.Broken, want) {
			t.Errorf("broken %+v lack %s", ps.Broken, want)
		}
	}
}

// TestRunCancel: ctx ends the run promptly, aborting hung requests.
func TestRunCancel(t *testing.T) {
	srv := classServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	cfg := Config{
		Targets: []Target{{Name: "hang", URL: srv.URL + "/hang", Rate: 50}},
		Phases:  []Phase{{Name: "p1", Duration: 10 * time.Second}},
		Timeout: 20 * time.Second,
		OnPhase: func(Phase, time.Time) { time.AfterFunc(300*time.Millisecond, cancel) },
	}
	begin := time.Now()
	rep, err := Run(ctx, cfg)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("Run took %v after cancel at 300ms", d)
	}
	if rep == nil || !rep.Interrupted || rep.Valid || len(rep.Phases) != 1 || rep.Phases[0].Valid {
		t.Fatalf("report = %+v, want interrupted and invalid", rep)
	}
}

// TestRunPerPhaseRates: a phase's Rates change a target's send rate at the
// phase boundary; the other target keeps its rate. Counts are exact per
// phase and per window, and each phase is judged against its own schedule.
func TestRunPerPhaseRates(t *testing.T) {
	srv := okServer(t)
	var mu sync.Mutex
	var snaps []Snapshot
	cfg := Config{
		Targets: []Target{{Name: "a", URL: srv.URL + "/a", Rate: 50}, {Name: "b", URL: srv.URL + "/b", Rate: 20}},
		Phases: []Phase{{Name: "baseline", Duration: time.Second},
			{Name: "fault", Duration: time.Second, Rates: map[string]float64{"a": 150}}},
		Window: 500 * time.Millisecond, Timeout: 2 * time.Second, LagThreshold: 50 * time.Millisecond,
		Progress: func(s Snapshot) { mu.Lock(); snaps = append(snaps, s); mu.Unlock() },
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		n    int64
		rate float64
	}{"a/baseline": {50, 50}, "a/fault": {150, 150}, "b/baseline": {20, 20}, "b/fault": {20, 20}}
	if len(rep.Phases) != len(want) {
		t.Fatalf("phases = %d, want %d", len(rep.Phases), len(want))
	}
	for _, ps := range rep.Phases {
		key := ps.Endpoint + "/" + ps.Phase
		w := want[key]
		if ps.Counts[ClassOK] != w.n || ps.Counts.Total() != w.n || ps.Expected != w.n || ps.TargetRate != w.rate || ps.Dropped != 0 {
			t.Errorf("%s: ok=%d total=%d expected=%d target=%v dropped=%d, want %d at %v/s",
				key, ps.Counts[ClassOK], ps.Counts.Total(), ps.Expected, ps.TargetRate, ps.Dropped, w.n, w.rate)
		}
		if !ps.Valid {
			t.Errorf("%s invalid: sent %d of %d, lag p99 %v: %v", key, ps.Sent, ps.Expected, ps.LagP99, ps.Broken)
		}
	}
	if !rep.Valid {
		t.Errorf("report invalid")
	}
	wantWin := map[string][]int64{"a": {25, 25, 75, 75}, "b": {10, 10, 10, 10}}
	if len(rep.Windows) != 8 {
		t.Fatalf("windows = %d, want 4 per endpoint", len(rep.Windows))
	}
	for _, w := range rep.Windows {
		exp := wantWin[w.Endpoint][w.Index]
		if w.Expected != exp || w.Counts.Total() != exp || w.Partial || w.TargetRate != float64(exp)*2 {
			t.Errorf("window %s/%d: expected %d total %d partial %v target %v, want %d at %v/s",
				w.Endpoint, w.Index, w.Expected, w.Counts.Total(), w.Partial, w.TargetRate, exp, float64(exp)*2)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range snaps {
		want := 50.0
		if s.Elapsed >= time.Second {
			want = 150
		}
		if len(s.Endpoints) != 2 || s.Endpoints[0].TargetRate != want || s.Endpoints[1].TargetRate != 20 {
			t.Errorf("snapshot at %v: %+v, want a at %v/s and b at 20/s", s.Elapsed, s.Endpoints, want)
		}
	}
}

// TestRunValidityRules: a canary slower than its limit, a target that does
// not answer and one that answers only what no rule classifies each make
// their phase invalid with a reason naming them; the unclassified statuses
// are counted.
func TestRunValidityRules(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow-canary":
			time.Sleep(20 * time.Millisecond)
		case "/limited":
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/"
	ln.Close() // nothing listens there now
	cfg := Config{
		Targets: []Target{
			{Name: "canary", URL: srv.URL + "/slow-canary", Rate: 20, Canary: true},
			{Name: "dead", URL: dead, Rate: 20},
			{Name: "limited", URL: srv.URL + "/limited", Rate: 20},
			{Name: "fine", URL: srv.URL + "/", Rate: 20},
		},
		Phases: []Phase{{Name: "baseline", Duration: 500 * time.Millisecond}, {Name: "fault", Duration: 300 * time.Millisecond}},
		Window: 100 * time.Millisecond, Timeout: time.Second, LagThreshold: time.Second,
		CanaryMaxP99: 5 * time.Millisecond,
		Health:       &Health{Phases: []string{"baseline"}, MinSuccess: 0.99, MaxUnreachable: 0.01},
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Valid {
		t.Error("report valid despite a slow canary and a dead target")
	}
	broken := map[string][]rundata.Broken{}
	for _, ps := range rep.Phases {
		broken[ps.Endpoint+"/"+ps.Phase] = ps.Broken
	}
	// want is the rule each phase breaks alone ("" none) and, for health,
	// the one class all its results had.
	for key, want := range map[string]struct {
		rule  rundata.Rule
		class rundata.Class
	}{
		"canary/baseline":  {rule: rundata.RuleCanary},
		"canary/fault":     {rule: rundata.RuleCanary},
		"dead/baseline":    {rundata.RuleHealth, rundata.ClassTransportError},
		"limited/baseline": {rundata.RuleHealth, rundata.ClassOther},
		"fine/baseline":    {},
		"dead/fault":       {}, // health applies to the baseline only
	} {
		bs := broken[key]
		if want.rule == "" {
			if len(bs) > 0 {
				t.Errorf("%s: broken %+v, want none", key, bs)
			}
			continue
		}
		if len(bs) != 1 || bs[0].Rule != want.rule || bs[0].Endpoint+"/"+bs[0].Phase != key {
			t.Errorf("%s: broken %+v, want %s alone", key, bs, want.rule)
			continue
		}
		if b := bs[0]; want.rule == rundata.RuleHealth && (len(b.Classes) != 1 || b.Classes[0] != rundata.ClassShare{Class: want.class, Share: 100} || b.Measured != 0) {
			t.Errorf("%s: broken %+v, want 100 %% %s and no success", key, b, want.class)
		}
	}
	for _, ps := range rep.Phases {
		if ps.Endpoint == "limited" && ps.Unclassified["429"] != ps.Counts.Total() {
			t.Errorf("limited/%s: unclassified %v, want every result as 429", ps.Phase, ps.Unclassified)
		}
	}
}

// TestInjectedLag: the lag test fault sends every request up to InjectLag
// late, so the measured schedule lag p99 sits near it (and the lag rule
// calls the run INVALID), while the run's sends stay on schedule overall.
func TestInjectedLag(t *testing.T) {
	srv := classServer(t)
	cfg := Config{
		Targets: []Target{{Name: "ok", URL: srv.URL + "/ok", Rate: 200}},
		Phases:  []Phase{{Name: "p", Duration: time.Second}},
		Window:  100 * time.Millisecond, Timeout: time.Second,
		LagThreshold: 5 * time.Millisecond, InjectLag: 30 * time.Millisecond, Seed: 3,
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ps := rep.Phases[0]
	t.Logf("sent %d/%d, lag p99 %v max %v, valid %t %v", ps.Sent, ps.Expected, ps.LagP99, ps.LagMax, ps.Valid, ps.Broken)
	if ps.LagP99 < 20*time.Millisecond || ps.LagP99 > 80*time.Millisecond || ps.Valid {
		t.Errorf("lag p99 %v, valid %t; want about 30 ms and INVALID", ps.LagP99, ps.Valid)
	}
	if ps.Sent < ps.Expected-10 {
		t.Errorf("sent %d of %d", ps.Sent, ps.Expected)
	}
}
