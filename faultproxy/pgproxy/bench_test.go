package pgproxy

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bulkheadlab/bulkheadlab/internal/pgtest"
)

// Benchmarks compare a SELECT 1 round trip of a pgx client directly to
// PostgreSQL (pgtest) with one through a pass-through proxy, on one
// connection each, in both protocols; e.g.
//
//	go test -run '^$' -bench Select1 -benchtime 2000x ./faultproxy/pgproxy
//
// The proxy's cost is the difference of the two ns/op (target, read from
// the output, never asserted: at most 100 µs at the median).

func BenchmarkSelect1(b *testing.B) {
	pg := pgtest.Start(b)
	e := newEnv(b, pg.Addr, Config{})
	for _, mode := range []struct {
		name string
		mod  []func(*pgx.ConnConfig)
	}{{"extended", nil}, {"simple", []func(*pgx.ConnConfig){simple}}} {
		for _, side := range []struct{ name, addr string }{{"direct", pg.Addr}, {"proxied", e.srv.Addr()}} {
			b.Run(mode.name+"/"+side.name, func(b *testing.B) {
				c := connect(b, side.addr, mode.mod...)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				var one int
				for b.Loop() {
					if err := c.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
