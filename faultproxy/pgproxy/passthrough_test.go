package pgproxy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestPassThrough: with no faults a pgx client works through the proxy as
// it does against the server: simple and extended queries, prepared
// statements, a batch, transactions, COPY both ways, a row larger than
// the proxy's buffers; each round trip is one query in flight and ends
// forwarded.
func TestPassThrough(t *testing.T) {
	checkFDs(t)
	pg, e := pgEnv(t, Config{})
	pg.Exec(t, "CREATE TABLE kv (k text PRIMARY KEY, v int)")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ext := connect(t, e.srv.Addr())
	smp := connect(t, e.srv.Addr(), simple)

	for _, tc := range []struct {
		name string
		c    *pgx.Conn
	}{{"extended", ext}, {"simple", smp}} {
		var one int
		var s string
		if err := tc.c.QueryRow(ctx, "SELECT 1, $1::text", "a'b").Scan(&one, &s); err != nil || one != 1 || s != "a'b" {
			t.Errorf("%s: SELECT 1, $1 = %d, %q, %v; want 1, a'b", tc.name, one, s, err)
		}
	}

	if _, err := ext.Prepare(ctx, "ins", "INSERT INTO kv VALUES ($1, $2)"); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := ext.Exec(ctx, "ins", fmt.Sprint("k", i), i); err != nil {
			t.Fatalf("exec prepared ins %d: %v", i, err)
		}
	}

	b := &pgx.Batch{}
	b.Queue("SELECT count(*) FROM kv")
	b.Queue("SELECT v FROM kv WHERE k = $1", "k2")
	br := ext.SendBatch(ctx, b)
	var n, v int
	err1 := br.QueryRow().Scan(&n)
	err2 := br.QueryRow().Scan(&v)
	if err := br.Close(); err1 != nil || err2 != nil || err != nil || n != 3 || v != 2 {
		t.Errorf("batch: count %d (%v), v %d (%v), close %v; want 3, 2", n, err1, v, err2, err)
	}

	tx, err := ext.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO kv VALUES ('tx', 9)"); err != nil {
		t.Fatal(err)
	}
	if st := ext.PgConn().TxStatus(); st != 'T' {
		t.Errorf("status in a transaction %q, want T", st)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ext.QueryRow(ctx, "SELECT count(*) FROM kv WHERE k = 'tx'").Scan(&n); err != nil || n != 0 {
		t.Errorf("rolled-back row: count %d, %v; want 0", n, err)
	}

	rows := make([][]any, 5000)
	for i := range rows {
		rows[i] = []any{fmt.Sprint("c", i), i}
	}
	if got, err := ext.CopyFrom(ctx, pgx.Identifier{"kv"}, []string{"k", "v"}, pgx.CopyFromRows(rows)); err != nil || got != 5000 {
		t.Fatalf("COPY FROM: %d, %v; want 5000", got, err)
	}
	var out strings.Builder
	if tag, err := ext.PgConn().CopyTo(ctx, &out, "COPY (SELECT k FROM kv ORDER BY v LIMIT 4000) TO STDOUT"); err != nil || tag.RowsAffected() != 4000 {
		t.Fatalf("COPY TO: %v, %v; want 4000 rows", tag, err)
	}

	big := strings.Repeat("x", 3<<20)
	var back string
	if err := ext.QueryRow(ctx, "SELECT $1::text || 'y'", big).Scan(&back); err != nil || back != big+"y" {
		t.Errorf("a 3 MiB value and back: %d bytes, %v; want %d", len(back), err, len(big)+1)
	}

	if got := e.p.Inflight(); got != 0 {
		t.Errorf("%d queries in flight with both clients idle, want 0", got)
	}
	if got := gather(t, e.p, "faultproxy_pg_queries_total", "outcome", "forwarded"); got < 15 {
		t.Errorf("forwarded queries %v, want every round trip (≥ 15)", got)
	}
	for _, o := range []string{outcomeError, outcomeAborted, outcomeHang} {
		if got := gather(t, e.p, "faultproxy_pg_queries_total", "outcome", o); got != 0 {
			t.Errorf("%s queries %v, want 0", o, got)
		}
	}
}
