package pgproxy

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bulkheadlab/bulkheadlab/internal/pgtest"
	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
)

// startupMessage is a protocol 3.0 StartupMessage for pgtest's user and
// database.
func startupMessage() []byte {
	body := []byte("user\x00" + pgtest.User + "\x00database\x00" + pgtest.Database + "\x00\x00")
	b := binary.BigEndian.AppendUint32(nil, uint32(8+len(body)))
	b = binary.BigEndian.AppendUint32(b, 196608)
	return append(b, body...)
}

// untyped is an untyped packet: length, code, rest.
func untyped(code uint32, rest ...byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(8+len(rest)))
	b = binary.BigEndian.AppendUint32(b, code)
	return append(b, rest...)
}

// typed is a typed message header with the given length field, and body.
func typed(typ byte, length uint32, body ...byte) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{typ}, length), body...)
}

// sendRaw dials addr, writes in, and reads until the proxy closes the
// connection (at most 5 s): what came back, and whether it was closed.
func sendRaw(t *testing.T, addr string, in []byte) ([]byte, bool) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(in); err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(c)
	var ne net.Error
	return out, !(errors.As(err, &ne) && ne.Timeout())
}

// TestMalformedStreamClosesOnlyItsConnection: each malformed stream
// closes its own connection, counted under its reason, while a pgx
// connection opened before goes on working.
func TestMalformedStreamClosesOnlyItsConnection(t *testing.T) {
	checkFDs(t)
	_, e := pgEnv(t, Config{StartupTimeout: 300 * time.Millisecond})
	good := connect(t, e.srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	huge := typed('Q', MaxMessage+5)
	for _, tc := range []struct {
		name, reason string
		in           []byte
	}{
		{"startup length 4", reasonStartupLength, []byte{0, 0, 0, 4, 0, 3, 0, 0}},
		{"startup length 7", reasonStartupLength, []byte{0, 0, 0, 7, 0, 3, 0, 0}},
		{"startup longer than 10000", reasonStartupLength, binary.BigEndian.AppendUint32([]byte{0, 1, 0, 0}, 196608)},
		{"unknown startup code", reasonStartupCode, untyped(1234)},
		{"protocol 2", reasonStartupCode, untyped(2 << 16)},
		{"five SSLRequests", reasonNegotiation, append(append(append(untyped(codeSSLRequest), untyped(codeSSLRequest)...), untyped(codeGSSENCRequest)...), untyped(codeSSLRequest)...)},
		{"no startup packet", reasonStartupTime, []byte{0, 0}},
		{"message length 2", reasonBadLength, append(startupMessage(), typed('Q', 2)...)},
		{"message length over 1 GiB", reasonTooLong, append(startupMessage(), huge...)},
	} {
		before := gather(t, e.p, "faultproxy_pg_protocol_errors_total", "reason", tc.reason)
		if _, closed := sendRaw(t, e.srv.Addr(), tc.in); !closed {
			t.Errorf("%s (% x…): the proxy kept the connection open 5 s", tc.name, tc.in[:min(len(tc.in), 12)])
		}
		testkit.WaitFor(t, 5*time.Second, tc.name+" counted", func() bool {
			return gather(t, e.p, "faultproxy_pg_protocol_errors_total", "reason", tc.reason) == before+1
		})
		var one int
		if err := good.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
			t.Fatalf("after %s: the other connection's SELECT 1: %v", tc.name, err)
		}
	}
	testkit.WaitFor(t, 5*time.Second, "one connection open", func() bool { return e.p.Open() == 1 })
}

// TestSSLRequestAnsweredN: the proxy answers an SSLRequest 'N', so a pgx
// client with sslmode=prefer goes on in plain text and one with
// sslmode=require fails.
func TestSSLRequestAnsweredN(t *testing.T) {
	checkFDs(t)
	_, e := pgEnv(t, Config{})
	for _, tc := range []struct {
		mode string
		ok   bool
	}{{"prefer", true}, {"require", false}} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := connectMode(ctx, e.srv.Addr(), tc.mode)
		if (err == nil) != tc.ok {
			t.Errorf("sslmode=%s: %v; want success %v", tc.mode, err, tc.ok)
		}
		if c != nil {
			_ = c.Close(ctx)
		}
		cancel()
	}
	c, err := net.DialTimeout("tcp", e.srv.Addr(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	answer := make([]byte, 1)
	if _, err := c.Write(untyped(codeSSLRequest)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, answer); err != nil || answer[0] != 'N' {
		t.Errorf("SSLRequest answered %q, %v; want N", answer, err)
	}
}

// TestTLSPassthrough: with TLSPassthrough a client that requires TLS
// connects: its SSLRequest goes to the server and the TLS session is
// relayed as plain TCP, with a warning logged once; a latency fault then
// slows every round trip of the connection, and a fault with a match
// never applies there. A plain-text connection through the same proxy is
// still served per query (the error fault matches it).
func TestTLSPassthrough(t *testing.T) {
	checkFDs(t)
	_, e := pgEnv(t, Config{TLSPassthrough: true},
		Fault{Type: TypeLatency, Percent: 100, Latency: 30 * time.Millisecond},
		Fault{Type: TypeError, Percent: 100, Match: "pg_stat_ssl"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const q = "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"
	for range 2 {
		c, err := connectMode(ctx, e.srv.Addr(), "require")
		if err != nil {
			t.Fatalf("sslmode=require through TLSPassthrough: %v", err)
		}
		var ssl bool
		d, err := timed(func() error { return c.QueryRow(ctx, q).Scan(&ssl) })
		if err != nil || !ssl || d < 30*time.Millisecond {
			t.Errorf("%s on the relayed TLS connection: %v, %v after %v; want true after ≥ 30ms", q, ssl, err, d)
		}
		_ = c.Close(ctx)
	}
	if got := gather(t, e.p, "faultproxy_pg_tls_passthrough_total", "", ""); got != 2 {
		t.Errorf("TLS relays %v, want 2", got)
	}
	if n := countSub(e.log.String(), "TLSPassthrough"); n != 1 {
		t.Errorf("warnings logged %d times, want once: %q", n, e.log.String())
	}
	plain := connect(t, e.srv.Addr())
	var ssl bool
	if err := plain.QueryRow(ctx, q).Scan(&ssl); err == nil {
		t.Errorf("%s on a plain connection passed, want the error fault", q)
	}
}

// TestClientVanishesMidQuery: a client that closes its connection while
// its query is held (a hang), or while the server runs it, leaves no
// connection, query or socket behind in the proxy.
func TestClientVanishesMidQuery(t *testing.T) {
	checkFDs(t)
	_, e := pgEnv(t, Config{}, Fault{Type: TypeHang, Percent: 100, Match: "hang me"})
	for _, sql := range []string{"SELECT 'hang me'", "SELECT pg_sleep(30)"} {
		c := connect(t, e.srv.Addr())
		done := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := c.Exec(ctx, sql)
			done <- err
		}()
		testkit.WaitFor(t, 5*time.Second, sql+" in flight", func() bool { return e.p.Inflight() == 1 })
		_ = c.PgConn().Conn().Close()
		if err := <-done; err == nil {
			t.Errorf("%s on a closed connection succeeded", sql)
		}
		testkit.WaitFor(t, 5*time.Second, "no connection, no query", func() bool { return e.p.Open() == 0 && e.p.Inflight() == 0 })
	}
	if h, a := gather(t, e.p, "faultproxy_pg_queries_total", "outcome", outcomeHang),
		gather(t, e.p, "faultproxy_pg_queries_total", "outcome", outcomeAborted); h != 1 || a != 1 {
		t.Errorf("outcomes hang %v, aborted %v; want 1 each", h, a)
	}
}

// TestUpstreamCloses: when the server ends a session (pg_terminate_backend)
// the client gets the server's last words and a closed connection, and
// the proxy lets go of both sides.
func TestUpstreamCloses(t *testing.T) {
	checkFDs(t)
	pg, e := pgEnv(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := connect(t, e.srv.Addr())
	var pid int
	if err := c.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	admin := connect(t, pg.Addr)
	if _, err := admin.Exec(ctx, "SELECT pg_terminate_backend($1)", pid); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the proxy to close the session", func() bool { return e.p.Open() == 0 }) // admin is direct
	_, err := c.Exec(ctx, "SELECT 1")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57P01" {
		t.Errorf("SELECT 1 on a session the server ended: %v; want the server's FATAL 57P01", err)
	}
}

func countSub(s, sub string) int {
	n := 0
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			n++
		}
	}
	return n
}
