package pgtest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestStartServesAndStops: a started server runs SQL that Exec set up,
// serves TLS to a client that requires it,
// and no process of it (the postmaster and its children) is left once its
// test has ended.
func TestStartServesAndStops(t *testing.T) {
	var pid int
	t.Run("serve", func(t *testing.T) {
		s := Start(t)
		pid = s.pid
		s.Exec(t, "CREATE TABLE kv (k text PRIMARY KEY, v int); INSERT INTO kv VALUES ('a', 1)")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, s.DSN())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		var v int
		if err := c.QueryRow(ctx, "SELECT v FROM kv WHERE k = $1", "a").Scan(&v); err != nil || v != 1 {
			t.Fatalf("SELECT v = %d, %v; want 1", v, err)
		}
		tc, err := pgx.Connect(ctx, strings.Replace(s.DSN(), "sslmode=disable", "sslmode=require", 1))
		if err != nil {
			t.Fatalf("connect with sslmode=require: %v", err)
		}
		defer tc.Close(ctx)
		var ssl bool
		if err := tc.QueryRow(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl); err != nil || !ssl {
			t.Errorf("pg_stat_ssl.ssl = %v, %v; want a TLS session", ssl, err)
		}
		if n := len(family(pid)); n < 2 {
			t.Fatalf("%d processes of the postmaster's family while it serves, want it and its backends", n)
		}
	})
	if pid == 0 {
		return // skipped
	}
	if left := family(pid); len(left) > 0 {
		t.Errorf("processes of the server left after its test: %v", left)
	}
}

// family lists process pid and its children (Linux /proc).
func family(pid int) []string {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []string
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if strings.HasPrefix(s, strconv.Itoa(pid)+" ") || len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, s[:strings.LastIndexByte(s, ')')+1])
		}
	}
	return out
}
