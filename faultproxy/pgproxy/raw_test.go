package pgproxy

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// rawClient speaks the protocol by hand, for the exchanges pgx does not
// make: an extended COPY, a Flush before the Sync.
type rawClient struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

// dialRaw logs in to addr (trust) and reads up to the first ReadyForQuery.
func dialRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	r := &rawClient{t: t, c: c, br: bufio.NewReader(c)}
	r.send(startupMessage())
	r.until('Z')
	return r
}

// msg is a typed message with body.
func msg(typ byte, body string) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{typ}, uint32(4+len(body))), body...)
}

func (r *rawClient) send(bs ...[]byte) {
	r.t.Helper()
	for _, b := range bs {
		if _, err := r.c.Write(b); err != nil {
			r.t.Fatalf("write: %v", err)
		}
	}
}

// next reads one message: its type and body.
func (r *rawClient) next() (byte, []byte) {
	r.t.Helper()
	h := make([]byte, 5)
	if _, err := io.ReadFull(r.br, h); err != nil {
		r.t.Fatalf("read: %v", err)
	}
	body := make([]byte, binary.BigEndian.Uint32(h[1:])-4)
	if _, err := io.ReadFull(r.br, body); err != nil {
		r.t.Fatalf("read: %v", err)
	}
	return h[0], body
}

// until reads messages up to one of type typ, and returns their types
// (typ last) and its body.
func (r *rawClient) until(typ byte) (string, []byte) {
	r.t.Helper()
	var types strings.Builder
	for {
		got, body := r.next()
		types.WriteByte(got)
		if got == typ {
			return types.String(), body
		}
	}
}

// extended is Parse (unnamed), Bind, Describe, Execute of sql.
func extended(sql string) []byte {
	var b []byte
	b = append(b, msg('P', "\x00"+sql+"\x00\x00\x00")...)
	b = append(b, msg('B', "\x00\x00\x00\x00\x00\x00\x00\x00")...)
	b = append(b, msg('D', "P\x00")...)
	return append(b, msg('E', "\x00\x00\x00\x00\x00")...)
}

// TestExtendedCopyIgnoredSync: a COPY FROM STDIN sent with the extended
// protocol (as libpq's PQexecParams sends it: Parse to Execute, then Sync)
// has its Sync ignored by the server, which answers the copy after the
// client's next Sync: the proxy counts it as one query, and ends it.
func TestExtendedCopyIgnoredSync(t *testing.T) {
	checkFDs(t)
	pg, e := pgEnv(t, Config{})
	pg.Exec(t, "CREATE TABLE kv (k text, v int)")
	r := dialRaw(t, e.srv.Addr())
	r.send(extended("COPY kv FROM STDIN"), msg('S', ""))
	if types, _ := r.until('G'); types != "12nG" {
		t.Fatalf("answer to the COPY: %q, want ParseComplete, BindComplete, NoData, CopyInResponse", types)
	}
	r.send(msg('d', "a\t1\nb\t2\n"), msg('c', ""), msg('S', ""))
	types, status := r.until('Z')
	if !strings.Contains(types, "C") || string(status) != "I" {
		t.Fatalf("after CopyDone and Sync: %q, status %q; want CommandComplete then ReadyForQuery I", types, status)
	}
	r.send(msg('Q', "SELECT count(*) FROM kv\x00"))
	if types, _ := r.until('Z'); types != "TDCZ" {
		t.Errorf("SELECT after the COPY: %q, want TDCZ", types)
	}
	if n, f := e.p.Inflight(), gather(t, e.p, "faultproxy_pg_queries_total", "outcome", outcomeForwarded); n != 0 || f != 2 {
		t.Errorf("%d queries in flight, %v forwarded; want 0 and 2 (the COPY, the SELECT)", n, f)
	}
}

// TestErrorAtFlush: under an error fault a batch's Flush gets the
// ErrorResponse at once, as the server sends an error before the Sync;
// the ReadyForQuery follows the Sync. The server saw nothing.
func TestErrorAtFlush(t *testing.T) {
	checkFDs(t)
	_, e := pgEnv(t, Config{}, Fault{Type: TypeError, Percent: 100, Code: "40001", Message: "injected"})
	r := dialRaw(t, e.srv.Addr())
	r.send(extended("SELECT 1"), msg('H', ""))
	if typ, body := r.next(); typ != 'E' || !strings.Contains(string(body), "C40001\x00") {
		t.Fatalf("answer to the Flush: %c %q; want ErrorResponse 40001", typ, body)
	}
	r.send(msg('S', ""))
	if typ, body := r.next(); typ != 'Z' || string(body) != "I" {
		t.Fatalf("answer to the Sync: %c %q; want ReadyForQuery I", typ, body)
	}
	if n := e.p.Inflight(); n != 0 {
		t.Errorf("%d queries in flight, want 0", n)
	}
}
