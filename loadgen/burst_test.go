package loadgen

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
	"go.uber.org/goleak"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// burstServer answers scheduled requests (they carry X-Vegeta-Seq) at
// once. Of a burst's requests, the first permits hold until n have
// arrived (or 5 s have passed: the burst was not simultaneous) and then
// answer ok; the others are rejected at once, as a full bulkhead does.
type burstServer struct {
	*httptest.Server
	n, permits int
	mu         sync.Mutex
	arrived    int
	inside     int // burst requests in the handler
	maxInside  int
	scheduled  int
	timedOut   int
	all        chan struct{} // closed when n have arrived
}

func newBurstServer(t *testing.T, n, permits int) *burstServer {
	t.Helper()
	s := &burstServer{n: n, permits: permits, all: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *burstServer) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if r.Header.Get("X-Vegeta-Seq") != "" {
		s.scheduled++
		s.mu.Unlock()
		return
	}
	s.arrived++
	s.inside++
	s.maxInside = max(s.maxInside, s.inside)
	held := s.arrived <= s.permits
	if s.arrived == s.n {
		close(s.all)
	}
	s.mu.Unlock()
	defer func() { s.mu.Lock(); s.inside--; s.mu.Unlock() }()
	if !held {
		w.Header().Set("X-Bulkhead-Reject", "full")
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	select {
	case <-s.all:
	case <-time.After(5 * time.Second):
		s.mu.Lock()
		s.timedOut++
		s.mu.Unlock()
	case <-r.Context().Done():
	}
}

// TestRunBursts: a burst's requests are all inside the server at once; a
// server with 10 permits answers 10 ok and rejects the rest, classified by
// the default rules; a fleet's burst goes round-robin; the spread is
// recorded; the targets' windows and phases hold their schedules only; raw
// results are written per burst.
func TestRunBursts(t *testing.T) {
	hold, reject := newBurstServer(t, 100, 100), newBurstServer(t, 50, 10)
	fleet := []*burstServer{newBurstServer(t, 6, 6), newBurstServer(t, 6, 6)}
	var raw bytes.Buffer
	cfg := Config{
		Targets: []Target{{Name: "hold", URL: hold.URL + "/x", Rate: 20},
			{Name: "reject", URL: reject.URL + "/x", Rate: 20},
			{Name: "fleet", URLs: []string{fleet[0].URL + "/x", fleet[1].URL + "/x"}, Rate: 20}},
		Phases: []Phase{{Name: "only", Duration: 750 * time.Millisecond}},
		Window: 250 * time.Millisecond, Timeout: 10 * time.Second, LagThreshold: 50 * time.Millisecond,
		Bursts: []Burst{{Label: "hold", Target: "hold", At: 400 * time.Millisecond, Requests: 100},
			{Label: "reject", Target: "reject", At: 450 * time.Millisecond, Requests: 50},
			{Label: "fleet", Target: "fleet", At: 450 * time.Millisecond, Requests: 12}},
		BurstRaw: map[string]io.Writer{"hold": &raw},
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Bursts) != 3 {
		t.Fatalf("bursts = %+v, want 3", rep.Bursts)
	}
	want := map[string]rundata.Counts{"hold": {ClassOK: 100}, "reject": {ClassOK: 10, ClassRejected: 40}, "fleet": {ClassOK: 12}}
	for i, b := range rep.Bursts {
		cb := cfg.Bursts[i]
		t.Logf("burst %s: %d requests, release %v, writes %v..%v (spread %v), last response %v, late dials %d",
			b.Label, b.Requests, b.Release, b.FirstWrite, b.LastWrite, b.Spread(), b.LastResponse, b.LateDials)
		if b.Label != cb.Label || b.Target != cb.Target || b.Requests != cb.Requests || !b.At.Equal(rep.Start.Add(cb.At)) || b.Offset != cb.At {
			t.Errorf("burst %d: %+v, want the record of %+v", i, b, cb)
		}
		if b.Counts != want[b.Label] || b.Written != int64(cb.Requests) || b.DialErrors+b.WriteErrors+b.HarnessErrors != 0 || b.Abandoned {
			t.Errorf("burst %s: counts %v written %d errors %d/%d/%d abandoned %v, want %v", b.Label, b.Counts, b.Written,
				b.DialErrors, b.WriteErrors, b.HarnessErrors, b.Abandoned, want[b.Label])
		}
		// Generous bounds: the machine is shared.
		if b.Release < 0 || b.FirstWrite < b.Release || b.LastWrite < b.FirstWrite || b.LastResponse < b.LastWrite ||
			b.Spread() > 500*time.Millisecond || b.Latency.Count != int64(cb.Requests) {
			t.Errorf("burst %s: release %v writes %v..%v last response %v latency %+v: not a burst's timeline",
				b.Label, b.Release, b.FirstWrite, b.LastWrite, b.LastResponse, b.Latency)
		}
		if _, ok := b.ByClass["ok"]; !ok {
			t.Errorf("burst %s: no latency of class ok in %v", b.Label, b.ByClass)
		}
	}
	for _, s := range append([]*burstServer{hold, reject}, fleet...) {
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	if hold.maxInside != 100 || hold.timedOut != 0 {
		t.Errorf("hold server: at most %d burst requests inside at once (%d waited 5 s), want all 100", hold.maxInside, hold.timedOut)
	}
	for i, f := range fleet {
		if f.arrived != 6 {
			t.Errorf("fleet instance %d: %d burst requests, want 6 of 12", i, f.arrived)
		}
	}
	for _, s := range []*burstServer{hold, reject} {
		if s.scheduled != 15 {
			t.Errorf("server saw %d scheduled requests, want 15", s.scheduled)
		}
	}
	for _, ps := range rep.Phases {
		if ps.Counts.Total() != 15 || ps.Expected != 15 || ps.Counts[ClassOK] != 15 {
			t.Errorf("phase %s/%s: counts %v expected %d, want the 15 scheduled", ps.Endpoint, ps.Phase, ps.Counts, ps.Expected)
		}
	}
	for _, w := range rep.Windows {
		if w.Counts.Total() != 5 || w.Expected != 5 {
			t.Errorf("window %s/%d: counts %v expected %d, want the 5 scheduled", w.Endpoint, w.Index, w.Counts, w.Expected)
		}
	}
	n, dec := 0, vegeta.NewDecoder(&raw)
	for {
		var r vegeta.Result
		if err := dec.Decode(&r); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("raw burst hold: %v", err)
		}
		if r.Attack != "hold" || r.Code != 200 || r.Latency <= 0 || r.Seq != uint64(n) {
			t.Errorf("raw burst hold: result %d %+v", n, r)
		}
		n++
	}
	if n != 100 {
		t.Errorf("raw burst hold: %d results, want 100", n)
	}
}

func TestConfigBursts(t *testing.T) {
	base := func() Config {
		return Config{
			Targets: []Target{{Name: "a", URL: "http://127.0.0.1:1/a", Rate: 1},
				{Name: "c", URL: "http://127.0.0.1:1/healthz", Rate: 1, Canary: true}},
			Phases: []Phase{{Name: "p", Duration: 2 * time.Second}},
			Bursts: []Burst{{Label: "first", Target: "a", At: time.Second, Requests: 10}},
		}
	}
	ok := Burst{Label: "probe", Target: "a", At: time.Second, Requests: 10}
	tests := []struct {
		name  string
		edit  func(b *Burst, cfg *Config)
		field string // "" means valid
	}{
		{"valid", func(*Burst, *Config) {}, ""},
		{"at zero", func(b *Burst, _ *Config) { b.At = 0 }, ""},
		{"most requests", func(b *Burst, _ *Config) { b.Requests = MaxBurstRequests }, ""},
		{"raw", func(_ *Burst, c *Config) { c.BurstRaw = map[string]io.Writer{"probe": io.Discard} }, ""},
		{"empty label", func(b *Burst, _ *Config) { b.Label = "" }, `bursts[1].label: invalid load generator config: "" is not`},
		{"label with a slash", func(b *Burst, _ *Config) { b.Label = "a/b" }, `bursts[1].label: invalid load generator config: "a/b"`},
		{"duplicate label", func(b *Burst, _ *Config) { b.Label = "first" }, `bursts[1].label: invalid load generator config: duplicate burst "first"`},
		{"unknown target", func(b *Burst, _ *Config) { b.Target = "zz" }, `bursts[1].target: invalid load generator config: burst "probe": "zz"`},
		{"canary", func(b *Burst, _ *Config) { b.Target = "c" }, `bursts[1].target: invalid load generator config: burst "probe": "c" is a canary`},
		{"before the run", func(b *Burst, _ *Config) { b.At = -time.Millisecond }, `bursts[1].at: invalid load generator config: burst "probe"`},
		{"at the end", func(b *Burst, _ *Config) { b.At = 2 * time.Second }, `bursts[1].at: invalid load generator config: burst "probe"`},
		{"no requests", func(b *Burst, _ *Config) { b.Requests = 0 }, `bursts[1].requests: invalid load generator config: burst "probe"`},
		{"too many", func(b *Burst, _ *Config) { b.Requests = MaxBurstRequests + 1 }, `bursts[1].requests: invalid load generator config: burst "probe"`},
		{"raw of no burst", func(_ *Burst, c *Config) { c.BurstRaw = map[string]io.Writer{"zz": io.Discard} }, `burst raw: invalid load generator config: "zz"`},
		{"nil raw", func(_ *Burst, c *Config) { c.BurstRaw = map[string]io.Writer{"probe": nil} }, `burst raw: invalid load generator config: "probe"`},
	}
	for _, tt := range tests {
		cfg, b := base(), ok
		tt.edit(&b, &cfg)
		cfg.Bursts = append(cfg.Bursts, b)
		_, err := cfg.validate()
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%s %+v: unexpected error %v", tt.name, b, err)
		case tt.field != "" && (!errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.field)):
			t.Errorf("%s %+v: error %v, want ErrInvalidConfig with %q", tt.name, b, err, tt.field)
		}
	}
}

// TestRunBurstsAbandoned: when ctx ends while a burst's requests hang, Run
// returns promptly, the burst is abandoned with nothing counted, a burst
// not reached yet as well, and no goroutine or connection is left.
func TestRunBurstsAbandoned(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	srv := classServer(t) // /hang holds until the client goes away
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := Config{
		Targets: []Target{{Name: "hang", URL: srv.URL + "/hang", Rate: 5}},
		Phases:  []Phase{{Name: "only", Duration: 5 * time.Second}},
		Timeout: 20 * time.Second,
		Bursts: []Burst{{Label: "now", Target: "hang", At: 100 * time.Millisecond, Requests: 50},
			{Label: "later", Target: "hang", At: 4 * time.Second, Requests: 50}},
		OnPhase: func(Phase, time.Time) { time.AfterFunc(400*time.Millisecond, cancel) },
	}
	begin := time.Now()
	rep, err := Run(ctx, cfg)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if d := time.Since(begin); d > 3*time.Second {
		t.Errorf("Run took %v after cancel at 400ms", d)
	}
	if rep == nil || len(rep.Bursts) != 2 {
		t.Fatalf("report %+v, want 2 bursts", rep)
	}
	for _, b := range rep.Bursts {
		if !b.Abandoned || b.Counts.Total() != 0 || b.Written != 0 {
			t.Errorf("burst %s: abandoned %v counts %v written %d, want abandoned with nothing counted", b.Label, b.Abandoned, b.Counts, b.Written)
		}
	}
	srv.Close() // its handlers end once their clients are gone
}

// TestBurstOutcomes: a burst's failures are classified as a scheduled
// request's: refused connections are dial errors (transport_error), a
// server slower than the client timeout is client_timeout; an https
// target is reached over TLS on the pre-dialed connection.
func TestBurstOutcomes(t *testing.T) {
	srv := classServer(t)
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer tlsSrv.Close()
	tlsBase := tlsSrv.Client().Transport.(*http.Transport).TLSClientConfig
	cl, _ := NewClassifier(DefaultRules())
	tests := []struct {
		url     string
		class   Class
		dialErr int64
		// timeout is the calls' timeout: short only where the timeout is
		// the outcome (a race-instrumented TLS handshake on a loaded
		// machine can take longer than 200 ms).
		timeout time.Duration
	}{
		{srv.URL + "/ok", ClassOK, 0, 0},
		{srv.URL + "/dep_timeout", ClassDepTimeout, 0, 0},
		{srv.URL + "/hang", ClassClientTimeout, 0, 200 * time.Millisecond},
		{srv.URL + "/teapot", ClassOther, 0, 0},
		{refusedURL(t), ClassTransportError, 8, 0},
		{tlsSrv.URL + "/", ClassOK, 0, 0},
	}
	for _, tt := range tests {
		b := Burst{Label: "b", Target: "a", Requests: 8}
		timeout := tt.timeout
		if timeout == 0 {
			timeout = 10 * time.Second
		}
		bp, err := newBurstPlan(b, Target{Name: "a", URL: tt.url}, cl, timeout, tlsBase)
		if err != nil {
			t.Fatalf("%s: %v", tt.url, err)
		}
		at := time.Now().Add(30 * time.Millisecond)
		rs, released := bp.fire(context.Background(), time.Now(), at)
		s := bp.stats(at, at, released, rs)
		if s.Counts[tt.class] != 8 || s.DialErrors != tt.dialErr || s.Abandoned {
			t.Errorf("%s: counts %v dial errors %d abandoned %v, want 8 × %s, %d dial errors (first error %q)",
				tt.url, s.Counts, s.DialErrors, s.Abandoned, tt.class, tt.dialErr, rs[0].err)
		}
	}
}

// TestBurstOwnRequest: a burst with its own method and path sends that
// request to the target's server (the target's headers kept, its body
// not), and a path that is not absolute is refused by name.
func TestBurstOwnRequest(t *testing.T) {
	type seen struct{ method, uri, header, body string }
	got := make(chan seen, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.RequestURI(), r.Header.Get("X-Tenant"), string(b)}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	cl, _ := NewClassifier(DefaultRules())
	target := Target{Name: "a", URL: srv.URL + "/a?x=1", Method: http.MethodPut, Body: []byte("payload"), Header: http.Header{"X-Tenant": {"t1"}}}
	bp, err := newBurstPlan(Burst{Label: "jobs", Target: "a", Requests: 1, Method: http.MethodPost, Path: "/jobs?n=40&dependency=b"}, target, cl, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(30 * time.Millisecond)
	rs, released := bp.fire(context.Background(), time.Now(), at)
	if s := bp.stats(at, at, released, rs); s.Counts[ClassOK] != 1 {
		t.Errorf("counts %v, want one ok (202)", s.Counts)
	}
	if r := <-got; r != (seen{http.MethodPost, "/jobs?n=40&dependency=b", "t1", ""}) {
		t.Errorf("the server saw %+v, want POST /jobs?n=40&dependency=b with the target's header and no body", r)
	}

	p := &plan{cfg: Config{Targets: []Target{target}, Bursts: []Burst{{Label: "jobs", Target: "a", Requests: 1, Path: "jobs?n=1"}}}, duration: time.Second,
		classifiers: []*Classifier{cl}}
	if err := p.buildBursts(); err == nil || !strings.Contains(err.Error(), "bursts[0].path") {
		t.Errorf("a relative path: %v, want an error on bursts[0].path", err)
	}
}
