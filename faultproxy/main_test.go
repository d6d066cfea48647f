package faultproxy

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testEnv is an upstream, a proxy serving on :0 listeners, and clients.
type testEnv struct {
	up      *httptest.Server
	upCalls atomic.Int64
	p       *Proxy
	srv     *Server
	hc      *http.Client
	ctl     *Client
	dataURL string
}

type envOption func(*Config)

func newEnv(t testing.TB, opts ...envOption) *testEnv {
	t.Helper()
	e := &testEnv{}
	e.up = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.upCalls.Add(1)
		w.Header().Set("X-Upstream-Request-Id", r.Header.Get("X-Request-Id"))
		_, _ = io.WriteString(w, "upstream "+r.URL.RequestURI())
	}))
	u, _ := url.Parse(e.up.URL)
	cfg := Config{Upstream: u, Seed: 1, ErrorLog: log.New(io.Discard, "", 0)}
	for _, o := range opts {
		o(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv, err := Listen(p, "127.0.0.1:0", "127.0.0.1:0", log.New(io.Discard, "", 0))
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 2048, MaxConnsPerHost: 0}
	e.p, e.srv, e.dataURL = p, srv, "http://"+srv.Addr()
	e.hc = &http.Client{Transport: tr}
	e.ctl = NewClient(srv.ControlAddr(), nil)
	t.Cleanup(func() {
		// Close the clients' idle connections first: the server waits up to
		// 5 s for connections that never sent a request.
		tr.CloseIdleConnections()
		e.ctl.hc.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		e.up.Close()
	})
	return e
}

// get sends GET path with request id id and returns status, body and error.
func (e *testEnv) get(ctx context.Context, path, id string) (int, string, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.dataURL+path, nil)
	if err != nil {
		return 0, "", nil, err
	}
	if id != "" {
		req.Header.Set("X-Request-Id", id)
	}
	resp, err := e.hc.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header, err
}

func (e *testEnv) set(t testing.TB, fs ...Fault) {
	t.Helper()
	if err := e.ctl.Set(context.Background(), fs); err != nil {
		t.Fatalf("Set(%+v): %v", fs, err)
	}
}

// val returns the value of a single-series counter, gauge or (sample count
// of a) histogram.
func val(c prometheus.Collector) float64 {
	ch := make(chan prometheus.Metric, 1)
	go func() { c.Collect(ch); close(ch) }()
	var total float64
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			panic(err)
		}
		switch {
		case d.Counter != nil:
			total += d.Counter.GetValue()
		case d.Gauge != nil:
			total += d.Gauge.GetValue()
		case d.Histogram != nil:
			total += float64(d.Histogram.GetSampleCount())
		}
	}
	return total
}
