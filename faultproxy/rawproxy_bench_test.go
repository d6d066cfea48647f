package faultproxy

import (
	"bufio"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"
)

// Raw data plane benchmarks: one keep-alive connection over loopback,
// requests one after another. BenchmarkRawPassThrough includes the
// upstream call (another loopback connection); the fault ones answer
// without it, so they measure the plane's own cost of a fault's action.

func benchRaw(b *testing.B, fs []Fault) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "0123456789012345678901234567890123456789012345678901234567890123")
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	srv := rawBenchProxy(b, u, nil, fs)
	if _, ok := srv.data.(*rawServer); !ok {
		b.Skip("no raw data plane here")
	}
	conn, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	req := []byte("GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := conn.Write(req); err != nil {
			b.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// rawBenchProxy serves a proxy of upstream u with classes and faults fs
// on loopback until the benchmark ends.
func rawBenchProxy(b *testing.B, u *url.URL, classes []Class, fs []Fault) *Server {
	p, err := New(Config{Upstream: u, Seed: 1, ErrorLog: log.New(io.Discard, "", 0), Classes: classes})
	if err != nil {
		b.Fatal(err)
	}
	if err := p.SetFaults(fs); err != nil {
		b.Fatal(err)
	}
	srv, err := Listen(p, "127.0.0.1:0", "127.0.0.1:0", log.New(io.Discard, "", 0))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return srv
}

// BenchmarkRawPassThrough: no faults set.
func BenchmarkRawPassThrough(b *testing.B) { benchRaw(b, nil) }

// BenchmarkRawRolled: three faults rolled per request, none firing.
func BenchmarkRawRolled(b *testing.B) {
	benchRaw(b, []Fault{{Type: TypeLatency, Percent: 0, Params: Delay{Latency: 1}}, {Type: TypeError, Percent: 0}, {Type: TypeAbort, Percent: 0}})
}

// BenchmarkRawError: an error fault firing on every request.
func BenchmarkRawError(b *testing.B) {
	benchRaw(b, []Fault{{Type: TypeError, Percent: 100, Params: Reply{Status: 503, Body: "down"}}})
}

// BenchmarkRawPayload: a payload fault of 64 bytes firing on every request.
func BenchmarkRawPayload(b *testing.B) {
	benchRaw(b, []Fault{{Type: TypePayload, Percent: 100, Params: Payload{Size: 64}}})
}

// benchClasses are the route classes of BenchmarkClasses: four routes, as
// an audit of a dependency with a few of them declares.
var benchClasses = []Class{{Name: "report", Match: "^/reports/"}, {Name: "items", Match: "GET ^/items/"},
	{Name: "search", Match: "^/search"}, {Name: "admin", Match: "POST|PUT ^/admin/"}}

// BenchmarkClasses compares, side by side, the same requests through a
// proxy without route classes (plain), one with benchClasses (classes),
// and one with them and a fault with a match that never fires (match:
// the route looked at twice): each iteration sends one request to each,
// in turn, and the time of each is reported (ns/plain, ns/classes,
// ns/match) with the ratios to plain. begin: the request's decision
// alone (where the route is looked at, and the classes counted and ended);
// handler: ServeHTTP with an in-memory upstream (the proxy's own cost);
// raw: the raw data plane over loopback with a real upstream, as a run
// uses it.
func BenchmarkClasses(b *testing.B) {
	match := []Fault{{Type: TypeLatency, Percent: 0, Params: Delay{Latency: time.Millisecond}, Match: "^/reports/"}}
	sides := []struct {
		name    string
		classes []Class
		faults  []Fault
	}{{"plain", nil, nil}, {"classes", benchClasses, nil}, {"match", benchClasses, match}}
	report := func(b *testing.B, spent []time.Duration, n int) {
		plain := float64(spent[0]) / float64(n)
		for i, s := range sides {
			ns := float64(spent[i]) / float64(n)
			b.ReportMetric(ns, "ns/"+s.name)
			if i > 0 {
				b.ReportMetric(ns/plain, s.name+"/plain")
			}
		}
		b.ReportMetric(0, "ns/op") // each side's time is reported above
	}
	// inMemory is a proxy per side with an in-memory upstream.
	inMemory := func(b *testing.B) []*Proxy {
		u, _ := url.Parse("http://upstream.invalid")
		var ps []*Proxy
		for _, s := range sides {
			p, err := New(Config{Upstream: u, Seed: 1, Transport: memUpstream(), Classes: s.classes})
			if err != nil {
				b.Fatal(err)
			}
			if err := p.SetFaults(s.faults); err != nil {
				b.Fatal(err)
			}
			ps = append(ps, p)
		}
		return ps
	}
	b.Run("begin", func(b *testing.B) {
		ps := inMemory(b)
		method, target := []byte("GET"), []byte("/items/42?view=full")
		spent := make([]time.Duration, len(ps))
		n := 0
		b.ReportAllocs()
		for b.Loop() {
			for i, p := range ps {
				t0 := time.Now()
				for range 100 {
					arrived := time.Now()
					_, _, _, cls := p.begin(arrived, &reqLine{raw: true, method: method, target: target})
					if cls != 0 {
						p.classes.leave(cls, arrived)
					}
				}
				spent[i] += time.Since(t0) / 100
			}
			n++
		}
		report(b, spent, n)
	})
	b.Run("handler", func(b *testing.B) {
		ps := inMemory(b)
		req := httptest.NewRequest("GET", "/items/42?view=full", nil)
		spent := make([]time.Duration, len(ps))
		n := 0
		b.ReportAllocs()
		for b.Loop() {
			for i, p := range ps {
				t0 := time.Now()
				p.ServeHTTP(httptest.NewRecorder(), req)
				spent[i] += time.Since(t0)
			}
			n++
		}
		report(b, spent, n)
	})
	b.Run("raw", func(b *testing.B) {
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "0123456789012345678901234567890123456789012345678901234567890123")
		}))
		defer up.Close()
		u, _ := url.Parse(up.URL)
		type side struct {
			conn net.Conn
			br   *bufio.Reader
		}
		var ss []side
		for _, s := range sides {
			srv := rawBenchProxy(b, u, s.classes, s.faults)
			conn, err := net.Dial("tcp", srv.Addr())
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			ss = append(ss, side{conn, bufio.NewReader(conn)})
		}
		req := []byte("GET /items/42?view=full HTTP/1.1\r\nHost: x\r\n\r\n")
		spent := make([]time.Duration, len(ss))
		n := 0
		b.ReportAllocs()
		for b.Loop() {
			for i, s := range ss {
				t0 := time.Now()
				if _, err := s.conn.Write(req); err != nil {
					b.Fatal(err)
				}
				resp, err := http.ReadResponse(s.br, nil)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				spent[i] += time.Since(t0)
			}
			n++
		}
		report(b, spent, n)
	})
}
