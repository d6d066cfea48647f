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
	p, err := New(Config{Upstream: u, Seed: 1, ErrorLog: log.New(io.Discard, "", 0)})
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
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
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
