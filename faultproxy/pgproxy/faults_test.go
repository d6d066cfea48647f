package pgproxy

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql's pgx driver

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/pgtest"
)

// timed runs f and returns how long it took.
func timed(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	return time.Since(start), err
}

// quantile returns the q-quantile of ds (nearest rank).
func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

// TestLatencyPerQuery: a 50 ms latency fault holds each matched query's
// answer until 50 ms after the proxy received it, measured at a pgx client
// over 100 queries of each protocol: never sooner, and at the tail within
// 2 ms of a reference measured in the same loop under the same conditions.
// The reference is what an exact 50 ms delay would cost this machine: an
// unmatched query's round trip through the proxy plus how late this
// process wakes from a 50 ms sleep on the proxy's own timer (tens of
// microseconds on an idle machine; milliseconds where other work keeps the
// cores busy, as on a shared CI machine or under nice). The tail is p99;
// under the race detector, whose pauses land on single queries at random
// and make the 100-sample p99 a draw between two outliers, it is p95.
func TestLatencyPerQuery(t *testing.T) {
	checkFDs(t)
	const want = 50 * time.Millisecond
	_, e := pgEnv(t, Config{}, Fault{Type: TypeLatency, Percent: 100, Match: "slow", Latency: want})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tail := 0.99
	if raceEnabled {
		tail = 0.95
	}
	for _, tc := range []struct {
		name string
		mod  []func(*pgx.ConnConfig)
	}{{"extended", nil}, {"simple", []func(*pgx.ConnConfig){simple}}} {
		c := connect(t, e.srv.Addr(), tc.mod...)
		var one int
		query := func(sql string) time.Duration {
			d, err := timed(func() error { return c.QueryRow(ctx, sql).Scan(&one) })
			if err != nil {
				t.Fatalf("%s: %s: %v", tc.name, sql, err)
			}
			return d
		}
		query("SELECT 1 AS fast") // the statement cache's Prepare
		query("SELECT 1 AS slow")
		errs := make([]time.Duration, 0, 100)
		ref := make([]time.Duration, 0, 100)
		for range 100 {
			errs = append(errs, query("SELECT 1 AS slow")-want)
			rtt := query("SELECT 1 AS fast")
			at := time.Now().Add(want)
			faultproxy.SleepUntil(nil, nil, at)
			ref = append(ref, rtt+time.Since(at))
		}
		lo, p50, pt := quantile(errs, 0), quantile(errs, 0.5), quantile(errs, tail)
		rt := quantile(ref, tail)
		bound := 2*time.Millisecond + rt
		t.Logf("%s: client-measured latency minus %v over %d queries: min %v, p50 %v, p%g %v, max %v; "+
			"reference (an unmatched round trip + a 50ms sleep's lateness) p50 %v, p%g %v",
			tc.name, want, len(errs), lo, p50, tail*100, pt, quantile(errs, 1), quantile(ref, 0.5), tail*100, rt)
		if lo < 0 || pt > bound {
			t.Errorf("%s: latency error min %v, p%g %v; want ≥ 0 and p%g ≤ %v (2ms + the reference's %v)",
				tc.name, lo, tail*100, pt, tail*100, bound, rt)
		}
	}
	if got := gather(t, e.p, "faultproxy_injected_delay_seconds", "", ""); got < 200 {
		t.Errorf("injected delay histogram has %v samples, want ≥ 200", got)
	}
}

// TestErrorFault: an error fault answers a query with its SQLSTATE and
// message without the server seeing it, as a *pgconn.PgError to pgx,
// for both protocols, and the connection goes on: the next query passes,
// and in a transaction the status stays the server's.
func TestErrorFault(t *testing.T) {
	checkFDs(t)
	pg, e := pgEnv(t, Config{}, Fault{Type: TypeError, Percent: 100, Match: "kv", Code: "57014", Message: "injected cancel"})
	pg.Exec(t, "CREATE TABLE kv (k text PRIMARY KEY, v int)")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name string
		mod  []func(*pgx.ConnConfig)
	}{{"extended", nil}, {"simple", []func(*pgx.ConnConfig){simple}}} {
		c := connect(t, e.srv.Addr(), tc.mod...)
		for i := range 3 {
			_, err := c.Exec(ctx, "INSERT INTO kv VALUES ($1, 1)", fmt.Sprint(tc.name, i))
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "57014" || pe.Message != "injected cancel" || pe.Severity != "ERROR" {
				t.Fatalf("%s: INSERT %d under the error fault: %v (%T); want PgError 57014 injected cancel", tc.name, i, err, err)
			}
			var one int
			if err := c.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
				t.Fatalf("%s: SELECT 1 after the injected error: %d, %v", tc.name, one, err)
			}
		}
		tx, err := c.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "SELECT * FROM kv"); err == nil {
			t.Errorf("%s: SELECT * FROM kv in a transaction passed, want the injected error", tc.name)
		}
		if st := c.PgConn().TxStatus(); st != 'T' {
			t.Errorf("%s: transaction status after the injected error %q, want T (the server's)", tc.name, st)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatalf("%s: rollback: %v", tc.name, err)
		}
	}
	var n int
	c := connect(t, pg.Addr)
	if err := c.QueryRow(ctx, "SELECT count(*) FROM kv").Scan(&n); err != nil || n != 0 {
		t.Errorf("rows the server got: %d, %v; want 0 (the fault answered every INSERT)", n, err)
	}
	if got := gather(t, e.p, "faultproxy_pg_queries_total", "outcome", outcomeError); got != 8 {
		t.Errorf("error outcomes %v, want 8", got)
	}
}

// TestHangFault: a hung query is never answered; pgx's statement
// time-out (its context) sends a cancel request, which the proxy passes
// on to the server and which ends the hang as the server would end a
// statement (57014), so the connection goes on.
func TestHangFault(t *testing.T) {
	checkFDs(t)
	_, e := pgEnv(t, Config{}, Fault{Type: TypeHang, Percent: 100, Match: "pg_sleep"})
	c := connect(t, e.srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	d, err := timed(func() error {
		_, err := c.Exec(ctx, "SELECT pg_sleep(0)")
		return err
	})
	cancel()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" || d < 300*time.Millisecond || d > 2*time.Second {
		t.Fatalf("hung query with a 300ms deadline: %v (%T) after %v; want PgError 57014 after 300ms", err, err, d)
	}
	if got := gather(t, e.p, "faultproxy_pg_cancel_requests_total", "", ""); got != 1 {
		t.Errorf("cancel requests passed on %v, want 1", got)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	var one int
	if err := c.QueryRow(ctx2, "SELECT 1").Scan(&one); err != nil {
		t.Fatalf("SELECT 1 after the cancelled hang: %v", err)
	}
	if got := gather(t, e.p, "faultproxy_pg_queries_total", "outcome", outcomeCancelled); got != 1 {
		t.Errorf("cancelled outcomes %v, want 1", got)
	}
}

// TestCancelEndsHeldQuery: a query whose answer a latency fault holds is
// the proxy's slow statement, and a cancel request ends it as the server
// ends a cancelled one: at once, with 57014, the connection going on, and
// no longer counted in flight. Without this, a service whose time-out
// cancels slow queries would seem, from the proxy's in-flight count, to
// hold more queries than it has connections (the held answers of the ones
// it gave up on), and the limit inferred from that count would be wrong.
// Two clients: pgx with its cancel-request watcher (the connection stays),
// and database/sql with pgx's default, which cancels and then closes the
// connection, waiting for the server's end.
func TestCancelEndsHeldQuery(t *testing.T) {
	checkFDs(t)
	const hold = 3 * time.Second
	_, e := pgEnv(t, Config{}, Fault{Type: TypeLatency, Percent: 100, Latency: hold, Match: "slow"})
	c := connect(t, e.srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	d, err := timed(func() error {
		_, err := c.Exec(ctx, "SELECT 1 AS slow")
		return err
	})
	cancel()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" || d > hold/2 {
		t.Fatalf("held query with a 200ms deadline: %v (%T) after %v; want PgError 57014 well before the %v hold", err, err, d, hold)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	var one int
	if err := c.QueryRow(ctx2, "SELECT 1 AS fast").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT after the cancelled hold: %d, %v", one, err)
	}
	if got := gather(t, e.p, "faultproxy_pg_queries_total", "outcome", outcomeCancelled); got != 1 {
		t.Errorf("cancelled outcomes %v, want 1", got)
	}

	db, err := sql.Open("pgx", pgtest.DSNAt(e.srv.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const n = 6
	db.SetMaxOpenConns(n)
	errs := make(chan error, n)
	start := time.Now()
	for range n {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			var one int
			errs <- db.QueryRowContext(ctx, "SELECT 1 AS slow").Scan(&one)
		}()
	}
	for range n {
		if err := <-errs; err == nil {
			t.Fatalf("a held query under a 100ms deadline passed")
		}
	}
	for e.p.Inflight() > 0 && time.Since(start) < hold/2 {
		time.Sleep(5 * time.Millisecond)
	}
	if got, after := e.p.Inflight(), time.Since(start); got != 0 {
		t.Fatalf("queries in flight %v after %v, want 0 once the clients gave up (before the %v hold ended)", got, after, hold)
	} else {
		t.Logf("%d queries given up at 100ms: none in flight at the proxy after %v", n, after)
	}
}

// TestCancelReachesServer: with no fault, a statement time-out's cancel
// request goes through the proxy to the server, which cancels the running
// pg_sleep(30) at once.
func TestCancelReachesServer(t *testing.T) {
	checkFDs(t)
	_, e := pgEnv(t, Config{})
	c := connect(t, e.srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	d, err := timed(func() error {
		_, err := c.Exec(ctx, "SELECT pg_sleep(30)")
		return err
	})
	cancel()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" || d > 3*time.Second {
		t.Fatalf("pg_sleep(30) with a 200ms deadline: %v after %v; want the server's 57014 within 3s", err, d)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	if _, err := c.Exec(ctx2, "SELECT 1"); err != nil {
		t.Fatalf("SELECT 1 after the cancel: %v", err)
	}
}

// TestMatchSlowsOnlyMatchingStatements: latency with match
// "pg_sleep|analytics" slows pg_sleep and a prepared statement whose text
// names analytics (its Bind and Execute matched by the text of its Parse),
// not SELECT 1, on one connection of each protocol.
func TestMatchSlowsOnlyMatchingStatements(t *testing.T) {
	checkFDs(t)
	const lat = 60 * time.Millisecond
	_, e := pgEnv(t, Config{}, Fault{Type: TypeLatency, Percent: 100, Latency: lat, Match: "pg_sleep|analytics"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name string
		mod  []func(*pgx.ConnConfig)
	}{{"extended", nil}, {"simple", []func(*pgx.ConnConfig){simple}}} {
		c := connect(t, e.srv.Addr(), tc.mod...)
		for _, q := range []struct {
			sql  string
			slow bool
		}{
			{"SELECT 1", false},
			{"SELECT pg_sleep(0)", true},
			{"SELECT 1 AS analytics", true},
			{"SELECT 2", false},
		} {
			for i := range 3 {
				d, err := timed(func() error { _, err := c.Exec(ctx, q.sql); return err })
				if err != nil {
					t.Fatalf("%s: %s: %v", tc.name, q.sql, err)
				}
				if q.slow && d < lat || !q.slow && d > lat/2 {
					t.Errorf("%s: %q (round %d) took %v; want slowed by %v: %v", tc.name, q.sql, i, d, lat, q.slow)
				}
			}
		}
	}
}

// TestPercentIsDeterministic: an error fault of percent 50 fails about
// half the queries, the same ones for the same seed and query order, and
// other ones for another seed.
func TestPercentIsDeterministic(t *testing.T) {
	checkFDs(t)
	pg, e1 := pgEnv(t, Config{Seed: 7}, Fault{Type: TypeError, Percent: 50})
	e2 := newEnv(t, pg.Addr, Config{Seed: 7}, Fault{Type: TypeError, Percent: 50})
	e3 := newEnv(t, pg.Addr, Config{Seed: 8}, Fault{Type: TypeError, Percent: 50})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pattern := func(e *env) string {
		c := connect(t, e.srv.Addr(), simple)
		b := make([]byte, 200)
		for i := range b {
			b[i] = '.'
			if _, err := c.Exec(ctx, "SELECT 1"); err != nil {
				b[i] = 'E'
			}
		}
		return string(b)
	}
	a, b, other := pattern(e1), pattern(e2), pattern(e3)
	if a != b {
		t.Errorf("seed 7 twice decided differently:\n%s\n%s", a, b)
	}
	if a == other {
		t.Errorf("seeds 7 and 8 decided the same:\n%s", a)
	}
	if n := countByte(a, 'E'); n < 70 || n > 130 {
		t.Errorf("%d of 200 queries failed under percent 50, want about 100: %s", n, a)
	}
}

func countByte(s string, b byte) int {
	n := 0
	for i := range len(s) {
		if s[i] == b {
			n++
		}
	}
	return n
}

// TestFaultChangeAppliesToNextQuery: faults put through the control API
// while a connection is open act on its next query, and deleting them
// makes the next one pass.
func TestFaultChangeAppliesToNextQuery(t *testing.T) {
	checkFDs(t)
	_, e := pgEnv(t, Config{})
	c := connect(t, e.srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q := func() time.Duration {
		d, err := timed(func() error { _, err := c.Exec(ctx, "SELECT 1"); return err })
		if err != nil {
			t.Fatalf("SELECT 1: %v", err)
		}
		return d
	}
	if d := q(); d > 40*time.Millisecond {
		t.Errorf("SELECT 1 without faults took %v", d)
	}
	e.put(t, `{"faults":[{"type":"latency","latency":"80ms"}]}`)
	if d := q(); d < 80*time.Millisecond {
		t.Errorf("SELECT 1 after latency 80ms was put took %v, want ≥ 80ms", d)
	}
	e.put(t, `{"faults":[{"type":"error","code":"53300","message":"sorry, too many clients already"}]}`)
	_, err := c.Exec(ctx, "SELECT 1")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "53300" {
		t.Errorf("SELECT 1 after the error fault was put: %v; want 53300", err)
	}
	e.put(t, `{"faults":[]}`)
	if d := q(); d > 40*time.Millisecond {
		t.Errorf("SELECT 1 after the faults were cleared took %v", d)
	}
}
