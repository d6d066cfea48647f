package faultproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// manyConnectionTokens is a head of n headers, every one of them named by
// one of n Connection tokens.
func manyConnectionTokens(n int, start string) string {
	var b, conn strings.Builder
	b.WriteString(start)
	for i := range n {
		fmt.Fprintf(&b, "X-%d: v\r\n", i)
		if i > 0 {
			conn.WriteByte(',')
		}
		fmt.Fprintf(&conn, "x-%d", i)
	}
	return b.String() + "Connection: " + conn.String() + "\r\n\r\n"
}

// minCPU is the least CPU time of five runs of f (the process's: on a
// busy machine, wall time measures the others).
func minCPU(f func()) time.Duration {
	best := time.Duration(1 << 62)
	for range 5 {
		runtime.GC() // the garbage of earlier runs is not this run's work
		start := cpuTime()
		f()
		best = min(best, cpuTime()-start)
	}
	return best
}

// TestConnectionTokensLinear: dropping the headers that Connection names
// takes time linear in the head, on both data planes (a quadratic one
// took seconds for one 100 KB head of 20,000 headers and as many tokens):
// forty times the headers and tokens take well under 1,600 times as long
// (the bound, 400, leaves room for the cache and collector effects of the
// larger head: under the race detector, beside other tests, sixteen times
// the headers took up to 55 times as long), and every named header is
// dropped.
func TestConnectionTokensLinear(t *testing.T) {
	parse := func(n int) func() {
		raw := manyConnectionTokens(n, "GET / HTTP/1.1\r\nHost: h\r\n")
		return func() {
			var h head
			if err := readHead(bufio.NewReaderSize(strings.NewReader(raw), 4<<10), &h); err != nil {
				t.Fatal(err)
			}
			if err := h.parse(true); err != nil {
				t.Fatal(err)
			}
			for _, x := range h.hdrs {
				if !x.drop && x.name[0] == 'X' {
					t.Fatalf("%s named by Connection is not dropped", x.name)
				}
			}
		}
	}
	outH := func(n int) func() {
		in := http.Header{}
		var conn []string
		for i := range n {
			k := fmt.Sprintf("X-%d", i)
			in[k] = []string{"v"}
			conn = append(conn, k)
		}
		in["Connection"] = []string{strings.Join(conn, ", ")}
		return func() {
			if out := outHeader(in); len(out) != 1 { // User-Agent
				t.Fatalf("outHeader kept %d headers named by Connection", len(out)-1)
			}
		}
	}
	for name, f := range map[string]func(int) func(){"raw plane (parse)": parse, "net/http plane (outHeader)": outH} {
		small, large := minCPU(f(500)), minCPU(f(20000))
		ratio := float64(large) / float64(small)
		t.Logf("%s: 500 headers and tokens %v of CPU, 20,000 %v (×%.0f)", name, small, large, ratio)
		if ratio > 400 {
			t.Errorf("%s: 500 headers and tokens %v, 20,000 %v (×%.0f): not linear", name, small, large, ratio)
		}
	}
}

// BenchmarkHeadParseConnectionTokens parses a 100 KB request head of
// 10,000 headers, each named by a Connection token.
func BenchmarkHeadParseConnectionTokens(b *testing.B) {
	benchParse(b, manyConnectionTokens(10000, "GET / HTTP/1.1\r\nHost: h\r\n"), true)
}

// TestRawHeadBuffersGivenBack: a keep-alive connection that read one huge
// head does not keep buffers of its size: 16 connections after a 600 KiB
// head each hold a few MiB together, not tens.
func TestRawHeadBuffersGivenBack(t *testing.T) {
	addr := rawUpstream(t, func(conn net.Conn, br *bufio.Reader) {
		for {
			r, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			okFor(conn, r)
		}
	})
	e := newRawEnv(t, addr)
	heap := func() uint64 {
		runtime.GC()
		runtime.GC() // and what sync.Pools held until the first
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	big := "GET /big HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("b", 600<<10) + "\r\n\r\n"
	const conns = 16
	var open []net.Conn
	before := heap()
	for range conns {
		conn, br := rawDial(t, e)
		open = append(open, conn)
		for _, req := range []string{big, "GET /small HTTP/1.1\r\nHost: x\r\n\r\n"} {
			go func() { _, _ = io.WriteString(conn, req) }()
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
		}
	}
	after := heap()
	t.Logf("heap in use %.1f MiB → %.1f MiB", float64(before)/(1<<20), float64(after)/(1<<20))
	if grown := int64(after) - int64(before); grown > 8<<20 {
		t.Errorf("%d idle keep-alive connections after a 600 KiB head each: heap %d MiB → %d MiB, want under 8 MiB more",
			conns, before>>20, after>>20)
	}
	for _, c := range open {
		c.Close()
	}
}

// TestRawConnectionBudget: at its bound of client connections the data
// plane closes an idle one for a new client instead of holding file
// descriptors that the control API needs; the new client is served.
func TestRawConnectionBudget(t *testing.T) {
	addr := rawUpstream(t, func(conn net.Conn, br *bufio.Reader) {
		for {
			r, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			okFor(conn, r)
		}
	})
	e := newRawEnv(t, addr)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := newRawServer(e.p, nil)
	s.maxConns = 4
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	defer func() {
		s.Close()
		<-served
	}()
	get := func(path string) (net.Conn, error) {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return nil, err
		}
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		_, _ = io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			conn.Close()
			return nil, err
		}
		b, _ := io.ReadAll(resp.Body)
		if string(b) != "for "+path {
			err = fmt.Errorf("answer %q", b)
		}
		return conn, err
	}
	var idle []net.Conn
	for i := range 4 {
		c, err := get(fmt.Sprintf("/idle%d", i))
		if err != nil {
			t.Fatalf("client %d of 4: %v", i, err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	c, err := get("/fifth")
	if err != nil {
		t.Fatalf("a fifth client at a bound of 4 idle connections: %v, want its answer", err)
	}
	c.Close()
	closed := 0
	for _, c := range idle {
		_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err == io.EOF {
			closed++
		}
	}
	if closed != 1 {
		t.Errorf("%d of the 4 idle connections were closed for the fifth client, want 1", closed)
	}
}
