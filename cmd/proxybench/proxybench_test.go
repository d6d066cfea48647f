package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// A command name with spaces and parentheses; utime 250, stime 50.
	line := "4242 (my (odd) proc) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 9 0 100 1000000 500 18446744073709551615"
	got, err := parseStatCPU(line)
	if err != nil || got != 3*time.Second {
		t.Errorf("parseStatCPU = %v, %v; want 3s (300 ticks)", got, err)
	}
	for _, bad := range []string{"", "1 (x) S 1 2", "1 (x) S 1 2 3 4 5 6 7 8 9 10 x 5 0"} {
		if _, err := parseStatCPU(bad); err == nil {
			t.Errorf("parseStatCPU(%q) succeeded", bad)
		}
	}
}

func TestQuantile(t *testing.T) {
	var s []time.Duration
	for i := 1; i <= 100; i++ {
		s = append(s, time.Duration(i))
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50}, {0.9, 90}, {0.99, 99}, {1, 100}, {0, 1}} {
		if got := quantile(s, c.q); got != c.want {
			t.Errorf("quantile(1..100, %v) = %v, want %v", c.q, got, c.want)
		}
	}
	if quantile(nil, 0.5) != 0 {
		t.Errorf("quantile of nothing is not 0")
	}
}

func TestHeld(t *testing.T) {
	tests := []struct {
		c    cell
		want bool
	}{
		{cell{rate: 1000, sent: 3000, ok: 3000, elapsed: 3 * time.Second}, true},
		{cell{rate: 1000, sent: 3000, ok: 2996, elapsed: 3 * time.Second}, false},         // 99.87 % ok
		{cell{rate: 1000, sent: 3000, ok: 2998, elapsed: 3 * time.Second}, true},          // 99.93 % ok
		{cell{rate: 1000, sent: 3000, ok: 3000, elapsed: 3100 * time.Millisecond}, false}, // 96.8 % of the rate
		{cell{rate: 1000}, false},
	}
	for _, tt := range tests {
		if got := tt.c.held(); got != tt.want {
			t.Errorf("held(%d of %d at %d/s in %v) = %v, want %v", tt.c.ok, tt.c.sent, tt.c.rate, tt.c.elapsed, got, tt.want)
		}
	}
}

func TestRoundRateAndOrder(t *testing.T) {
	for in, want := range map[float64]int{2400: 2400, 2880: 2900, 240: 240, 241: 250, 34560: 34600} {
		if got := roundRate(in); got != want {
			t.Errorf("roundRate(%v) = %d, want %d", in, got, want)
		}
	}
	ts := []*target{{name: "a"}, {name: "b"}, {name: "c"}}
	names := func(ts []*target) (out []string) {
		for _, t := range ts {
			out = append(out, t.name)
		}
		return out
	}
	if got := names(order(ts, 0)); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("order round 0 = %v", got)
	}
	if got := names(order(ts, 1)); !slices.Equal(got, []string{"c", "b", "a"}) {
		t.Errorf("order round 1 = %v", got)
	}
	if names(ts)[0] != "a" {
		t.Errorf("order changed its argument")
	}
}

func TestDelayOf(t *testing.T) {
	const d = 225 * time.Millisecond
	c := cell{target: "x", sent: 4, ok: 4, lat: []time.Duration{d + time.Millisecond, d - 2*time.Millisecond, d, d + 3*time.Millisecond}}
	s := delayOf([]cell{c}, d)
	if s.p50 != time.Millisecond || s.max != 3*time.Millisecond || s.mean != time.Millisecond/2 {
		t.Errorf("delayOf = %+v, want |err| p50 1ms, max 3ms, mean signed +0.5ms", s)
	}
}

// TestAttackUpstream: one short bounded attack on the upstream handler
// counts every request and measures latencies.
func TestAttackUpstream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(upstreamHandler))
	defer srv.Close()
	tg := newTarget("direct", srv.URL, 0, 2*time.Second)
	defer tg.closeIdle()
	c := attack(t.Context(), tg, 200, 250*time.Millisecond, attackOpts{timeout: 2 * time.Second, maxWorkers: 50})
	if c.sent < 40 || c.ok != c.sent || len(c.lat) != c.ok {
		t.Errorf("attack: sent %d ok %d latencies %d errors %v; want ~50 sent, all ok", c.sent, c.ok, len(c.lat), c.errs)
	}
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != strings.Repeat("x", 64) {
		t.Errorf("upstream body = %q", b)
	}
}

func TestParseOrder(t *testing.T) {
	got, err := parseOrder("toxiproxy, ours,direct")
	if err != nil || !slices.Equal(got, []string{"toxiproxy", "ours", "direct"}) {
		t.Errorf("parseOrder = %v, %v", got, err)
	}
	for _, bad := range []string{"", "ours,toxiproxy", "ours,ours,direct", "direct,ours,toxiproxy,ours", "direct,ours,toxi"} {
		if _, err := parseOrder(bad); err == nil || !strings.Contains(err.Error(), "-order") {
			t.Errorf("parseOrder(%q) = %v, want an error naming -order", bad, err)
		}
	}
	b := &bench{ord: []string{"toxiproxy", "direct", "ours"}}
	d, o, x := &target{name: "direct"}, &target{name: "ours"}, &target{name: "toxiproxy"}
	if got := b.inOrder(d, o, x); !slices.Equal(got, []*target{x, d, o}) {
		t.Errorf("inOrder(direct, ours, toxiproxy) = %v", got)
	}
	if got := b.inOrder(o, x); !slices.Equal(got, []*target{x, o}) {
		t.Errorf("inOrder(ours, toxiproxy) = %v", got)
	}
}

func TestSliceCell(t *testing.T) {
	for _, c := range []struct {
		dur, slice time.Duration
		n          int
		each       time.Duration
	}{
		{5 * time.Second, 500 * time.Millisecond, 10, 500 * time.Millisecond},
		{5 * time.Second, 0, 1, 5 * time.Second},
		{5 * time.Second, 5 * time.Second, 1, 5 * time.Second},
		{5 * time.Second, 2 * time.Second, 3, 5 * time.Second / 3}, // 2.5 rounds to 3
		{time.Second, 300 * time.Millisecond, 3, time.Second / 3},
	} {
		n, each := sliceCell(c.dur, c.slice)
		if n != c.n || each != c.each {
			t.Errorf("sliceCell(%v, %v) = %d × %v, want %d × %v", c.dur, c.slice, n, each, c.n, c.each)
		}
	}
}

func TestJoin(t *testing.T) {
	a := cell{target: "ours", rate: 1000, dur: time.Second, sent: 1000, ok: 999, lat: []time.Duration{3, 1},
		errs: map[string]int{"EOF": 1}, elapsed: time.Second, cpu: 40 * time.Millisecond, upCPU: 30 * time.Millisecond}
	b := cell{target: "ours", rate: 1000, dur: time.Second, sent: 1000, ok: 1000, lat: []time.Duration{2},
		errs: map[string]int{}, elapsed: time.Second, cpu: 50 * time.Millisecond, upCPU: 20 * time.Millisecond}
	first := join(cell{}, a)
	first.lat[0] = 9 // the joined cell owns its latencies
	first.errs["x"] = 1
	if a.lat[0] != 3 || a.errs["x"] != 0 {
		t.Fatalf("join shares the first slice's latencies or errors")
	}
	got := join(join(cell{}, a), b)
	if got.sent != 2000 || got.ok != 1999 || got.dur != 2*time.Second || got.elapsed != 2*time.Second ||
		got.cpu != 90*time.Millisecond || got.upCPU != 50*time.Millisecond || got.errs["EOF"] != 1 ||
		!slices.Equal(got.lat, []time.Duration{3, 1, 2}) || got.rate != 1000 || got.target != "ours" {
		t.Errorf("join = %+v", got)
	}
}

// TestRelay runs the bare relay in process in front of an httptest server
// and sends keep-alive requests and a large body through it.
func TestRelay(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, strings.Repeat("y", len(b))+"|"+r.URL.Path)
	}))
	defer up.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go relayConn(ctx, c, strings.TrimPrefix(up.URL, "http://"))
		}
	}()
	defer func() { cancel(); l.Close(); <-done }()
	hc := &http.Client{Timeout: 5 * time.Second}
	defer hc.CloseIdleConnections()
	for i, n := range []int{0, 10, 1 << 20} {
		res, err := hc.Post("http://"+l.Addr().String()+"/p"+strconv.Itoa(i), "text/plain", strings.NewReader(strings.Repeat("x", n)))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if want := strings.Repeat("y", n) + "|/p" + strconv.Itoa(i); string(b) != want {
			t.Fatalf("request %d: got %d bytes, want %d", i, len(b), len(want))
		}
	}
}
