package faultproxy

import (
	"bufio"
	"strings"
	"testing"
)

// The heads of the pass-through benchmark (scripts/bench-proxy.sh): what
// vegeta sends and what a net/http server answers.
const (
	benchRequestHead  = "GET /work HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: Go-http-client/1.1\r\nX-Request-Id: 0123456789abcdef\r\nAccept-Encoding: gzip\r\n\r\n"
	benchResponseHead = "HTTP/1.1 200 OK\r\nContent-Length: 64\r\nContent-Type: text/plain; charset=utf-8\r\nDate: Tue, 01 Dec 2026 09:00:00 GMT\r\n\r\n"
)

func benchParse(b *testing.B, raw string, req bool) {
	r := strings.NewReader(raw)
	br := bufio.NewReaderSize(r, 4<<10)
	var h head
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(raw)
		br.Reset(r)
		if err := readHead(br, &h); err != nil {
			b.Fatal(err)
		}
		if err := h.parse(req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHeadParseRequest(b *testing.B)  { benchParse(b, benchRequestHead, true) }
func BenchmarkHeadParseResponse(b *testing.B) { benchParse(b, benchResponseHead, false) }
