package pgproxy

import (
	"encoding/binary"
	"io"
	"net"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// fakeServer is the least of a PostgreSQL server, for the fuzz test: it
// closes a cancel request's connection, accepts any other startup packet with AuthenticationOk, BackendKeyData and
// ReadyForQuery, answers a Query with CommandComplete and ReadyForQuery
// and a Sync with ReadyForQuery, and ignores every other message; a
// malformed stream closes its connection.
type fakeServer struct {
	l  net.Listener
	wg sync.WaitGroup
}

func newFakeServer(t testing.TB) *fakeServer {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{l: l}
	s.wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.wg.Go(func() { defer c.Close(); fakeSession(c) })
		}
	})
	t.Cleanup(func() { l.Close(); s.wg.Wait() })
	return s
}

func fakeSession(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	hdr := make([]byte, 8)
	if _, err := io.ReadFull(c, hdr); err != nil {
		return
	}
	l := binary.BigEndian.Uint32(hdr)
	if l < 8 || l > MaxStartupPacket || binary.BigEndian.Uint32(hdr[4:]) == codeCancelRequest {
		return
	}
	if _, err := io.CopyN(io.Discard, c, int64(l-8)); err != nil {
		return
	}
	ready := []byte{'Z', 0, 0, 0, 5, 'I'}
	greeting := append([]byte{'R', 0, 0, 0, 8, 0, 0, 0, 0, 'K', 0, 0, 0, 12, 0, 0, 0, 7, 0, 0, 0, 9}, ready...)
	if _, err := c.Write(greeting); err != nil {
		return
	}
	for {
		if _, err := io.ReadFull(c, hdr[:5]); err != nil {
			return
		}
		l := binary.BigEndian.Uint32(hdr[1:5])
		if l < 4 || l > 1<<20 {
			return
		}
		if _, err := io.CopyN(io.Discard, c, int64(l-4)); err != nil {
			return
		}
		var answer []byte
		switch hdr[0] {
		case 'Q':
			answer = append([]byte{'C', 0, 0, 0, 13, 'S', 'E', 'L', 'E', 'C', 'T', ' ', '1', 0}, ready...)
		case 'S':
			answer = ready
		case 'X':
			return
		}
		if _, err := c.Write(answer); err != nil {
			return
		}
	}
}

// fuzzSeeds are client streams: well-formed sessions of both protocols,
// with the negotiations a client may start with, and malformed ones.
func fuzzSeeds() [][]byte {
	q := func(sql string) []byte { return typed('Q', uint32(4+len(sql)+1), append([]byte(sql), 0)...) }
	msg := func(typ byte, body string) []byte { return typed(typ, uint32(4+len(body)), []byte(body)...) }
	ext := func(sql string) []byte {
		var b []byte
		b = append(b, msg('P', "s1\x00"+sql+"\x00\x00\x00")...)
		b = append(b, msg('B', "p1\x00s1\x00\x00\x00\x00\x00\x00\x00")...)
		b = append(b, msg('D', "Pp1\x00")...)
		b = append(b, msg('E', "p1\x00\x00\x00\x00\x00")...)
		return append(b, msg('S', "")...)
	}
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	su := startupMessage()
	return [][]byte{
		cat(su, q("SELECT 1"), q("SELECT 'a'"), msg('X', "")),
		cat(untyped(codeSSLRequest), untyped(codeGSSENCRequest), su, q("SELECT 'b'"), q("SELECT 'c'")),
		cat(su, ext("SELECT 'a' WHERE $1"), ext("SELECT 'b'"), msg('B', "\x00s1\x00\x00\x00\x00\x00\x00\x00"), msg('E', "\x00\x00\x00\x00\x00"), msg('H', ""), msg('S', "")),
		cat(su, ext("SELECT 'c'"), q("SELECT 1"), msg('S', ""), msg('d', "1\t2\n"), msg('c', ""), msg('S', "")),
		cat(su, msg('C', "Ss1\x00"), msg('S', ""), msg('F', "\x00\x00\x00\x01"), msg('p', "secret\x00")),
		untyped(codeCancelRequest, 0, 0, 0, 7, 0, 0, 0, 9),
		cat(su, typed('Q', 2)),
		cat(su, typed('Q', 0xffffffff)),
		cat(su, typed('d', 20000), make([]byte, 20000)),
		{0, 0, 0, 8, 0, 0, 0, 0},
		{0x16, 3, 1, 0, 5},
	}
}

// FuzzClientStream sends arbitrary bytes as a client through a proxy (with
// faults of each type on statements matching a, b or c) to fakeServer:
// the proxy must not panic, and once the client has closed its side it
// must close the connection and hold no connection or query within 5 s.
func FuzzClientStream(f *testing.F) {
	up := newFakeServer(f)
	e := newEnv(f, up.l.Addr().String(), Config{StartupTimeout: time.Second},
		Fault{Type: TypeLatency, Percent: 100, Latency: time.Millisecond, Match: "a"},
		Fault{Type: TypeError, Percent: 50, Match: "b"},
		Fault{Type: TypeHang, Percent: 100, Match: "c"})
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := net.DialTimeout("tcp", e.srv.Addr(), 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = c.Write(in) // the proxy may have closed it already
		_ = c.(*net.TCPConn).CloseWrite()
		_, err = io.Copy(io.Discard, c)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("the proxy kept the connection open 5 s after the client's end; input % x", in[:min(len(in), 64)])
		}
		deadline := time.Now().Add(5 * time.Second)
		for e.p.Open() != 0 || e.p.Inflight() != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d connections, %d queries held 5 s after the client's end; input % x", e.p.Open(), e.p.Inflight(), in[:min(len(in), 64)])
			}
			time.Sleep(time.Millisecond)
		}
	})
}

// FuzzClasses: any statement classes (as the proxy's --class flags give
// them) are refused with an error or counted without a panic, and a valid
// class matches a statement exactly when its expression does.
func FuzzClasses(f *testing.F) {
	f.Add("report", `(?i)\bfrom report_`, "SELECT * FROM report_daily")
	f.Add("a b", "x", "x")
	f.Add("r", "(", "")
	f.Add("r", "", "SELECT 1")
	f.Fuzz(func(t *testing.T, name, match, text string) {
		cs := []Class{{Name: name, Match: match}}
		if ValidateClasses(cs) != nil {
			return
		}
		c := newClasses(cs, prometheus.NewRegistry())
		got := c.match([]byte(text)) == 1
		if want := regexp.MustCompile(match).MatchString(text); got != want {
			t.Fatalf("class %q on %q: matched %v, want %v", match, text, got, want)
		}
		c.count(1)
	})
}
