package faultproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// Handler micro-benchmarks: the proxy's own cost per request, without
// sockets (the upstream is an in-memory RoundTripper). Compare with
// BenchmarkServeHTTPDirect, the same upstream called without the proxy.

func memUpstream() roundTripFunc {
	body := strings.Repeat("x", 64)
	return func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(body)),
			Header: http.Header{"Content-Type": {"text/plain"}}, ContentLength: 64, Request: r}, nil
	}
}

func benchHandler(b *testing.B, fs []Fault) {
	u, _ := url.Parse("http://upstream.invalid")
	p, err := New(Config{Upstream: u, Seed: 1, Transport: memUpstream()})
	if err != nil {
		b.Fatal(err)
	}
	if err := p.SetFaults(fs); err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/x", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		p.ServeHTTP(w, req)
	}
}

// BenchmarkServeHTTPPassThrough: no faults set.
func BenchmarkServeHTTPPassThrough(b *testing.B) { benchHandler(b, nil) }

// BenchmarkServeHTTPRolled: three faults rolled per request, none firing
// (percent 0): the cost of the decision itself.
func BenchmarkServeHTTPRolled(b *testing.B) {
	benchHandler(b, []Fault{{Type: TypeLatency, Percent: 0, Params: Delay{Latency: 1}}, {Type: TypeError, Percent: 0}, {Type: TypeAbort, Percent: 0}})
}

// BenchmarkServeHTTPDirect: the in-memory upstream and recorder alone.
func BenchmarkServeHTTPDirect(b *testing.B) {
	up := memUpstream()
	req := httptest.NewRequest("GET", "/x", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		resp, _ := up.RoundTrip(req)
		_, _ = io.Copy(w, resp.Body)
	}
}

// BenchmarkDecide: the decision for a set of three faults.
func BenchmarkDecide(b *testing.B) {
	set := newFaultSet([]Fault{{Type: TypeLatency, Percent: 50, Params: Delay{Latency: 1000, Jitter: 10}}, {Type: TypeError, Percent: 10}, {Type: TypeAbort, Percent: 1}})
	b.ReportAllocs()
	var seq uint64
	for b.Loop() {
		seq++
		_ = set.decide(1, seq, allMatched)
	}
}

// BenchmarkServeHTTPPayload: a payload fault of 64 bytes firing on every
// request, against BenchmarkServeHTTPPassThrough's 64-byte upstream
// answer: the document is built once per set, so answering with it costs
// no more than forwarding.
func BenchmarkServeHTTPPayload(b *testing.B) {
	benchHandler(b, []Fault{{Type: TypePayload, Percent: 100, Params: Payload{Size: 64}}})
}
