package faultproxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/bulkheadlab/bulkheadlab/internal/runtimestats"
	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
)

// histogram returns the sample count and sum of a single-series histogram
// of p's registry.
func histogram(t *testing.T, p *Proxy, name string) (uint64, float64) {
	t.Helper()
	mfs, err := p.m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && mf.GetType() == dto.MetricType_HISTOGRAM && len(mf.Metric) == 1 {
			h := mf.Metric[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	t.Fatalf("no histogram %s", name)
	return 0, 0
}

// TestUpstreamDuration: faultproxy_upstream_duration_seconds times the
// upstream call alone (an injected delay is not in it), on the raw data
// plane and through ServeHTTP.
func TestUpstreamDuration(t *testing.T) {
	const upLatency, delay, n = 20 * time.Millisecond, 150 * time.Millisecond, 3
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(upLatency)
		_, _ = io.WriteString(w, "ok")
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	check := func(t *testing.T, p *Proxy, base string, hc *http.Client) {
		t.Helper()
		if err := p.SetFaults([]Fault{{Type: TypeLatency, Percent: 100, Params: Delay{Latency: delay}}}); err != nil {
			t.Fatal(err)
		}
		for range n {
			resp, err := hc.Get(base + "/x")
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
		}
		// The raw plane observes a call just after its answer went out:
		// the client can have read the answer first.
		testkit.WaitFor(t, 10*time.Second, "the last call to be observed", func() bool {
			c, _ := histogram(t, p, "faultproxy_upstream_duration_seconds")
			return c >= n
		})
		count, sum := histogram(t, p, "faultproxy_upstream_duration_seconds")
		mean := time.Duration(sum / float64(max(count, 1)) * float64(time.Second))
		// The upstream's own time at least; well below the injected delay
		// (with it, the mean would be above 170 ms).
		if count != n || mean < upLatency || mean >= delay {
			t.Errorf("upstream duration: %d calls, mean %v; want %d, within [%v, %v)", count, mean, n, upLatency, delay)
		}
		if c, _ := histogram(t, p, "faultproxy_injected_delay_seconds"); c != n {
			t.Errorf("injected delays observed: %d, want %d", c, n)
		}
	}
	t.Run("raw", func(t *testing.T) {
		p, err := New(Config{Upstream: u, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		srv, err := Listen(p, "127.0.0.1:0", "127.0.0.1:0", log.New(io.Discard, "", 0))
		if err != nil {
			t.Fatal(err)
		}
		hc := &http.Client{Transport: &http.Transport{}}
		defer func() {
			hc.CloseIdleConnections()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = srv.Shutdown(ctx)
		}()
		check(t, p, "http://"+srv.Addr(), hc)
	})
	t.Run("ServeHTTP", func(t *testing.T) {
		p, err := New(Config{Upstream: u, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(p)
		defer srv.Close()
		defer p.closeIdleConnections()
		check(t, p, srv.URL, srv.Client())
		srv.Client().CloseIdleConnections()
	})
}

// TestMetricsExposition: the control API's /metrics shows the upstream
// duration's buckets and the Go runtime's scheduling latency and GC pauses
// (runtimestats), next to the Go and process collectors, and every reason
// of the client errors before any was counted.
func TestMetricsExposition(t *testing.T) {
	e := newEnv(t)
	if status, _, _, err := e.get(context.Background(), "/", ""); err != nil || status != 200 {
		t.Fatalf("GET / = %d %v", status, err)
	}
	status, body := controlDo(t, e, "GET", "/metrics", "")
	if status != 200 {
		t.Fatalf("GET /metrics = %d", status)
	}
	for _, want := range []string{
		`faultproxy_upstream_duration_seconds_bucket{le="0.0001"} `,
		`faultproxy_upstream_duration_seconds_bucket{le="60"} 1`,
		`faultproxy_upstream_duration_seconds_bucket{le="+Inf"} 1`,
		"faultproxy_upstream_duration_seconds_count 1",
		runtimestats.SchedLatency + "_bucket",
		runtimestats.GCPause + "_count",
		"go_goroutines",
		"process_cpu_seconds_total",
		`faultproxy_client_errors_total{reason="malformed"} 0`,
		`faultproxy_client_errors_total{reason="stalled_body"} 0`,
		`faultproxy_client_errors_total{reason="head_too_large"} 0`,
		`faultproxy_client_errors_total{reason="unsupported"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// scrapeGauge scrapes the control API's /metrics at base and returns the
// value of the unlabelled series name.
func scrapeGauge(t *testing.T, hc *http.Client, base, name string) float64 {
	t.Helper()
	resp, err := hc.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", name, line, err)
			}
			return f
		}
	}
	t.Fatalf("/metrics lacks %s", name)
	return 0
}

// TestInflightPeak: faultproxy_inflight_peak shows the most requests in
// progress at once since the previous scrape, and a scrape resets it to
// the count in progress, on the raw data plane and through ServeHTTP: n
// requests held by a hang show n while they hang and once they are gone,
// and the next scrape shows 0.
func TestInflightPeak(t *testing.T) {
	const n, name = 8, "faultproxy_inflight_peak"
	check := func(t *testing.T, p *Proxy, dataURL, controlURL string) {
		t.Helper()
		hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
		defer hc.CloseIdleConnections()
		if got := scrapeGauge(t, hc, controlURL, name); got != 0 {
			t.Errorf("before any request: %s %v, want 0", name, got)
		}
		if err := p.SetFaults([]Fault{{Type: TypeHang, Percent: 100}}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{}, n)
		for range n {
			go func() {
				defer func() { done <- struct{}{} }()
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, dataURL+"/x", nil)
				if resp, err := hc.Do(req); err == nil {
					resp.Body.Close()
				}
			}()
		}
		testkit.WaitFor(t, 10*time.Second, "the requests to hang", func() bool { return p.Inflight() == n })
		if got := scrapeGauge(t, hc, controlURL, name); got != n {
			t.Errorf("%d requests hanging: %s %v, want %d", n, name, got, n)
		}
		cancel()
		for range n {
			<-done
		}
		testkit.WaitFor(t, 10*time.Second, "the requests to end", func() bool { return p.Inflight() == 0 })
		p.ClearFaults()
		if got := scrapeGauge(t, hc, controlURL, name); got != n {
			t.Errorf("%d requests hung and ended since the last scrape: %s %v, want %d", n, name, got, n)
		}
		if got := scrapeGauge(t, hc, controlURL, name); got != 0 {
			t.Errorf("nothing in progress since the last scrape: %s %v, want 0", name, got)
		}
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	t.Run("raw", func(t *testing.T) {
		p, err := New(Config{Upstream: u, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		srv, err := Listen(p, "127.0.0.1:0", "127.0.0.1:0", log.New(io.Discard, "", 0))
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = srv.Shutdown(ctx)
		}()
		check(t, p, "http://"+srv.Addr(), "http://"+srv.ControlAddr())
	})
	t.Run("ServeHTTP", func(t *testing.T) {
		p, err := New(Config{Upstream: u, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		data, control := httptest.NewServer(p), httptest.NewServer(p.ControlHandler())
		defer data.Close()
		defer control.Close()
		defer p.closeIdleConnections()
		check(t, p, data.URL, control.URL)
	})
}

// TestInflightEndsBeforeTheAnswer: on the raw data plane a request leaves
// the in-flight count before its answer goes out, for every kind of
// answer, so that the count never holds a call whose caller already has
// its answer (and may have sent the next one in its place): no byte of an
// answer is written to the client while the count is not 0, and once the
// client holds the answer's head, the count is 0. A case with raw sends
// that request on a connection of its own instead of a GET.
func TestInflightEndsBeforeTheAnswer(t *testing.T) {
	if !rawSupported {
		t.Skip("no raw data plane here")
	}
	for _, tt := range []struct {
		name   string
		faults []Fault
		raw    string
		status int
	}{
		{"forwarded", nil, "", 200},
		{"error", []Fault{{Type: TypeError, Percent: 100, Params: Reply{Status: 503}}}, "", 503},
		{"payload", []Fault{{Type: TypePayload, Percent: 100, Params: Payload{Size: 64 << 10}}}, "", 200},
		{"delayed then forwarded", []Fault{{Type: TypeLatency, Percent: 100, Params: Delay{Latency: 5 * time.Millisecond}}}, "", 200},
		{"a target that cannot be forwarded", nil, "GET http://x/%zz HTTP/1.1\r\nHost: x\r\n\r\n", 400},
	} {
		e := newEnv(t)
		if err := e.p.SetFaults(tt.faults); err != nil {
			t.Fatal(err)
		}
		dataURL, atWrite := serveRawCountingWrites(t, e.p)
		for i := range 20 {
			var resp *http.Response
			var err error
			if tt.raw != "" {
				resp, err = rawRequest(dataURL, tt.raw)
			} else {
				resp, err = e.hc.Get(dataURL + "/x")
			}
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if resp.StatusCode != tt.status {
				t.Errorf("%s, request %d: %d, want %d", tt.name, i, resp.StatusCode, tt.status)
			}
			// The head is here; the body may still be on its way.
			if n := e.p.Inflight(); n != 0 {
				t.Errorf("%s, request %d: %d in flight once the client has the answer, want 0", tt.name, i, n)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if n := atWrite.Swap(0); n != 0 {
				t.Errorf("%s, request %d: %d in flight as its answer was written, want 0", tt.name, i, n)
			}
		}
	}
}

// serveRawCountingWrites serves p's raw data plane on a listener of its
// own until the test ends, and returns its URL and the most requests that
// p counted in flight as bytes were written to a client (before they went
// out), since the caller last swapped it for 0.
func serveRawCountingWrites(t *testing.T, p *Proxy) (string, *atomic.Int64) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &countingListener{Listener: ln, p: p}
	s := newRawServer(p, log.New(io.Discard, "", 0))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(l)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		<-done
	})
	return "http://" + ln.Addr().String(), &l.atWrite
}

// countingListener's connections record p's in-flight count, at its
// highest, in atWrite before each write.
type countingListener struct {
	net.Listener
	p       *Proxy
	atWrite atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, l: l}, nil
}

type countingConn struct {
	net.Conn
	l *countingListener
}

func (c *countingConn) Write(b []byte) (int, error) {
	n := c.l.p.Inflight()
	for m := c.l.atWrite.Load(); n > m; m = c.l.atWrite.Load() {
		if c.l.atWrite.CompareAndSwap(m, n) {
			break
		}
	}
	return c.Conn.Write(b)
}

// SyscallConn is the TCP connection's, so that the raw plane watches the
// client as it does without the wrapper.
func (c *countingConn) SyscallConn() (syscall.RawConn, error) {
	return c.Conn.(syscall.Conn).SyscallConn()
}

// rawRequest sends req as it is on a new connection to dataURL and reads
// the answer's head; closing its body closes the connection.
func rawRequest(dataURL, req string) (*http.Response, error) {
	conn, err := net.Dial("tcp", strings.TrimPrefix(dataURL, "http://"))
	if err != nil {
		return nil, err
	}
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, req); err != nil {
		conn.Close()
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		conn.Close()
		return nil, err
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{resp.Body, conn}
	return resp, nil
}

// clientErrors returns p's faultproxy_client_errors_total by reason.
func clientErrors(p *Proxy) map[string]float64 {
	m := map[string]float64{}
	for _, r := range clientErrorReasons {
		m[r] = val(p.m.clientErrors[r])
	}
	return m
}

// refusedOnce returns "" if p counted one client error under reason since
// before (clientErrors then), and none under another (none at all for
// reason ""); else what it counted.
func refusedOnce(p *Proxy, before map[string]float64, reason string) string {
	now := clientErrors(p)
	var got []string
	ok := true
	for _, r := range clientErrorReasons {
		d := now[r] - before[r]
		if d != 0 {
			got = append(got, fmt.Sprintf("%s +%v", r, d))
		}
		want := 0.0
		if r == reason {
			want = 1
		}
		ok = ok && d == want
	}
	if ok {
		return ""
	}
	want := "nothing"
	if reason != "" {
		want = reason + " +1"
	}
	return fmt.Sprintf("faultproxy_client_errors_total %v, want %s", got, want)
}
