package faultproxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func init() {
	typeCases[TypeThrottle] = typeCase{
		valid:   Fault{Type: TypeThrottle, Percent: 100, Params: Throttle{BytesPerSecond: 1 << 20}},
		invalid: Fault{Type: TypeThrottle, Percent: 100}, field: "fault.bytes_per_second", status: 200,
	}
}

// TestThrottleParams: the rate is required and bounded, given in bytes (an
// integer) in the control API's JSON, and the throttle takes no other
// parameter; a valid one round-trips.
func TestThrottleParams(t *testing.T) {
	for _, tt := range []struct{ body, want string }{
		{`{"type":"throttle"}`, "faults[0].bytes_per_second: must be between 1 and 1099511627776 bytes per second, got 0"},
		{`{"type":"throttle","bytes_per_second":0}`, "faults[0].bytes_per_second: must be between 1"},
		{`{"type":"throttle","bytes_per_second":-5}`, "faults[0].bytes_per_second: must be between 1 and 1099511627776 bytes per second, got -5"},
		{`{"type":"throttle","bytes_per_second":1099511627777}`, "faults[0].bytes_per_second: must be between 1"},
		{`{"type":"throttle","bytes_per_second":"64KiB"}`, "faults[0].bytes_per_second: want integer, got JSON string"},
		{`{"type":"throttle","bytes_per_second":1.5}`, "faults[0].bytes_per_second: want integer, got JSON number"},
		{`{"type":"throttle","bytes_per_second":1024,"latency":"1s"}`, "faults[0].latency: only valid for type latency or capacity"},
		{`{"type":"throttle","bytes_per_second":1024,"rate":8}`, `faults[0]: unknown field "rate"`},
		{`{"type":"error","bytes_per_second":1024}`, "faults[0].bytes_per_second: only valid for type throttle"},
	} {
		_, err := ParseFaults(strings.NewReader(`{"faults":[` + tt.body + `]}`))
		if err == nil || !errors.Is(err, ErrInvalidFault) || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("ParseFaults(%s) = %v, want %q", tt.body, err, tt.want)
		}
	}
	in := []Fault{{Type: TypeThrottle, Percent: 25, Params: Throttle{BytesPerSecond: 1}},
		{Type: TypeThrottle, Percent: 100, Params: Throttle{BytesPerSecond: MaxThrottleRate}}}
	b, err := marshalFaults(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"faults":[{"type":"throttle","percent":25,"bytes_per_second":1},{"type":"throttle","percent":100,"bytes_per_second":1099511627776}]}`; string(b) != want {
		t.Errorf("JSON %s, want %s", b, want)
	}
	out, err := ParseFaults(bytes.NewReader(b))
	if err != nil || !reflect.DeepEqual(out, in) {
		t.Errorf("round trip of %s: %+v, %v", b, out, err)
	}
}

// TestThrottleDecision: a throttle that fires names the decision of a
// forwarded request, after a delay; a terminal fault answers instead.
func TestThrottleDecision(t *testing.T) {
	thr := Fault{Type: TypeThrottle, Percent: 100, Params: Throttle{BytesPerSecond: 100}}
	for _, tt := range []struct {
		fs     []Fault
		want   string
		shaped uint64
	}{
		{[]Fault{thr}, "throttle", 1},
		{[]Fault{{Type: TypeLatency, Percent: 100, Params: Delay{Latency: time.Millisecond}}, thr}, "latency+throttle", 2},
		{[]Fault{thr, {Type: TypeError, Percent: 100}}, "error", 1},
		{[]Fault{thr, thr}, "throttle+throttle", 3},
		{[]Fault{{Type: TypeThrottle, Percent: 0, Params: Throttle{BytesPerSecond: 100}}}, "pass", 0},
	} {
		d := newFaultSet(tt.fs).decide(1, 1, allMatched)
		if d.String() != tt.want || d.Shaped != tt.shaped {
			t.Errorf("%+v: decision %q (shaped %b), want %q (%b)", tt.fs, d, d.Shaped, tt.want, tt.shaped)
		}
	}
}

// TestThrottleHoldAndPlanes: a throttled call holds its caller for its
// body at the rate (not known without the body's size); on a TCP
// dependency it is the downstream's bandwidth, and the PostgreSQL plane
// has none.
func TestThrottleHoldAndPlanes(t *testing.T) {
	f := Fault{Type: TypeThrottle, Percent: 100, Params: Throttle{BytesPerSecond: 16 << 10}}
	h := f.Hold(64 << 10)
	if h.Kind != HoldAdds || h.Mean != 4*time.Second || h.Least != 4*time.Second || h.Most != 4*time.Second || h.Param != "bytes_per_second" {
		t.Errorf("Hold(64KiB) = %+v, want 4s added", h)
	}
	if h := f.Hold(0); h.Kind != HoldAdds || h.Mean != 0 || h.Most != Unbounded {
		t.Errorf("Hold(unknown) = %+v, want nothing known, unbounded", h)
	}
	w, err := f.OnPlane(PlaneTCP)
	if want := map[string]any{"type": "bandwidth", "stream": "downstream", "bytes_per_second": int64(16 << 10)}; err != nil || !reflect.DeepEqual(w, want) {
		t.Errorf("on TCP: %v, %v; want %v", w, err, want)
	}
	var fe *FieldError
	if _, err := f.OnPlane(PlanePostgres); !errors.As(err, &fe) || fe.Field != "fault.type" {
		t.Errorf("on PostgreSQL: %v, want an error naming fault.type", err)
	}
	if got := f.Describe(); got != "throttle: answer bodies at 16384 bytes/s on 100 % of requests" {
		t.Errorf("Describe = %q", got)
	}
}

// TestThrottleMeasured: through a proxy with a throttle, a body of a real
// upstream on loopback arrives at the rate (measured bytes per second
// within [0.75, 1.1] of it), its head first; without the throttle the same
// body arrives far faster. On both data planes, with a length and chunked.
func TestThrottleMeasured(t *testing.T) {
	const size, rate = 96 << 10, 64 << 10 // 1.5 s at the rate
	body := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/chunked" {
			w.(http.Flusher).Flush() // no length: chunked
		} else {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		}
		_, _ = w.Write(body)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	for _, plane := range []string{"raw", "net-http"} {
		t.Run(plane, func(t *testing.T) {
			if plane == "raw" && !rawSupported {
				t.Skip("no raw data plane here")
			}
			cfg := Config{Upstream: u, Seed: 1, ErrorLog: log.New(io.Discard, "", 0)}
			if plane == "net-http" {
				cfg.Transport = NewTransport()
			}
			p, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			srv, err := Listen(p, "127.0.0.1:0", "127.0.0.1:0", log.New(io.Discard, "", 0))
			if err != nil {
				t.Fatal(err)
			}
			hc := &http.Client{Transport: &http.Transport{}, Timeout: 20 * time.Second}
			defer func() {
				hc.CloseIdleConnections()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := srv.Shutdown(ctx); err != nil {
					t.Errorf("Shutdown: %v", err)
				}
			}()
			for _, path := range []string{"/length", "/chunked"} {
				p.ClearFaults()
				free, _ := fetch(t, hc, "http://"+srv.Addr()+path, len(body))
				if err := p.SetFaults([]Fault{{Type: TypeThrottle, Percent: 100, Params: Throttle{BytesPerSecond: rate}}}); err != nil {
					t.Fatal(err)
				}
				took, head := fetch(t, hc, "http://"+srv.Addr()+path, len(body))
				got := float64(len(body)) / took.Seconds()
				t.Logf("%s: %d bytes in %v: %.0f bytes/s at a rate of %d (head after %v; %v without the throttle)", path, len(body), took, got, rate, head, free)
				if got < 0.75*rate || got > 1.1*rate {
					t.Errorf("%s: %.0f bytes/s, want %d ± [-25 %%, +10 %%]", path, got, rate)
				}
				if head > took/3 {
					t.Errorf("%s: the head came after %v of %v: it is not throttled", path, head, took)
				}
				if free > took/10 {
					t.Errorf("%s: %v without the throttle, %v with it: the throttle is not what slows it", path, free, took)
				}
			}
			if n := val(p.m.injected[TypeThrottle]); n != 2 {
				t.Errorf("throttles injected: %v, want 2", n)
			}
		})
	}
}

// fetch gets url and returns how long its whole answer took and when its
// head came; the body must be n bytes.
func fetch(t *testing.T, hc *http.Client, url string, n int) (took, head time.Duration) {
	t.Helper()
	start := time.Now()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	head = time.Since(start)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took = time.Since(start)
	if err != nil || resp.StatusCode != 200 || len(b) != n {
		t.Fatalf("GET %s: %d, %d bytes, %v; want 200 with %d bytes", url, resp.StatusCode, len(b), err, n)
	}
	return took, head
}

// TestThrottleStopsWithTheProxy: a throttled answer in progress ends when
// the proxy closes, not when its body would have.
func TestThrottleStopsWithTheProxy(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 1<<20)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(body) }))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	p, err := New(Config{Upstream: u, Seed: 1, ErrorLog: log.New(io.Discard, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetFaults([]Fault{{Type: TypeThrottle, Percent: 100, Params: Throttle{BytesPerSecond: 1024}}}); err != nil {
		t.Fatal(err)
	}
	srv, err := Listen(p, "127.0.0.1:0", "127.0.0.1:0", log.New(io.Discard, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 20 * time.Second}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://" + srv.Addr() + "/")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, resp.Body) // 1 MiB at 1 KiB/s: 17 minutes
		resp.Body.Close()
		done <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Error("the throttled body ended whole")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the throttled body goes on after the proxy closed")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the throttled answer ended %v after the proxy closed", d)
	}
}
