package service

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/pgtest"
)

// TestDatabaseDependency: an endpoint with a query runs it on a real
// PostgreSQL and answers with what came back; an SQL error is a 502 and a
// query past T a 504 (the driver cancels it); the database/sql pool's
// statistics are exported (go_sql_*, by endpoint).
func TestDatabaseDependency(t *testing.T) {
	pg := pgtest.Start(t)
	pg.Exec(t, "CREATE TABLE items (id int PRIMARY KEY, name text); INSERT INTO items SELECT g, 'item ' || g FROM generate_series(1, 50) g")
	s, err := New(Config{Layout: LayoutConfig{Mode: ModeBulkhead, PoolSize: 8}, Timeout: 250 * time.Millisecond, Conns: 4,
		Endpoints: []Endpoint{
			{Name: "rows", URL: pg.DSN(), Query: "SELECT id, name FROM items"},
			{Name: "bad", URL: pg.DSN(), Query: "SELECT * FROM no_such_table"},
			{Name: "slow", URL: pg.DSN(), Query: "SELECT pg_sleep(2)"},
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	get := func(path string) (int, string, time.Duration) {
		start := time.Now()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), time.Since(start)
	}
	if code, body, _ := get("/rows"); code != http.StatusOK || !strings.Contains(body, "rows 50,") {
		t.Errorf("/rows: %d %q, want 200 rows 50", code, body)
	}
	if code, body, _ := get("/bad"); code != http.StatusBadGateway || !strings.Contains(body, "42P01") {
		t.Errorf("/bad: %d %q, want 502 naming SQLSTATE 42P01", code, body)
	}
	if code, body, took := get("/slow"); code != http.StatusGatewayTimeout || took > time.Second {
		t.Errorf("/slow (pg_sleep(2), T = 250 ms): %d %q after %v, want 504 within about T", code, body, took)
	}
	_, metrics, _ := get("/metrics")
	for _, want := range []string{`go_sql_max_open_connections{db_name="rows"} 4`, `go_sql_wait_count_total{db_name="slow"}`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics has no %q", want)
		}
	}
}

// TestDatabasePoolLayouts: seed-004's database claim at the service's
// level, on a real PostgreSQL: an analytical query that holds its
// connections (pg_sleep) makes an interactive one wait for a connection
// when both draw from one database pool, its query time unchanged, and
// does not when each has its own.
func TestDatabasePoolLayouts(t *testing.T) {
	pg := pgtest.Start(t)
	const hold = 300 * time.Millisecond
	for _, tc := range []struct {
		layout   ConnsLayout
		min, max time.Duration // of every interactive call's latency
	}{
		{ConnsShared, hold / 2, time.Second},
		{ConnsPerDependency, 0, hold / 3},
	} {
		s, err := New(Config{Layout: LayoutConfig{Mode: ModeBulkhead, PoolSize: 40}, Timeout: time.Second,
			Conns: 4, ConnsLayout: tc.layout,
			Endpoints: []Endpoint{
				{Name: "analytics", URL: pg.DSN(), Query: fmt.Sprintf("SELECT pg_sleep(%g)", hold.Seconds())},
				{Name: "lookup", URL: pg.DSN(), Query: "SELECT 1"},
			}})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(s.Handler())
		client := &http.Client{Timeout: 10 * time.Second}
		get := func(path string) (int, time.Duration) {
			start := time.Now()
			resp, err := client.Get(srv.URL + path)
			if err != nil {
				t.Errorf("%s: GET %s: %v", tc.layout, path, err)
				return 0, 0
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode, time.Since(start)
		}
		for range 4 { // open the interactive pool's connections
			get("/lookup")
		}
		// 4 analytical calls keep every connection of a pool of 4 busy
		// for 0.3 s; 4 interactive calls come 50 ms later.
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { get("/analytics") })
		}
		time.Sleep(50 * time.Millisecond)
		var mu sync.Mutex
		var took []time.Duration
		for range 4 {
			wg.Go(func() {
				code, d := get("/lookup")
				mu.Lock()
				defer mu.Unlock()
				if code != http.StatusOK {
					t.Errorf("%s: /lookup %d, want 200", tc.layout, code)
				}
				took = append(took, d)
			})
		}
		wg.Wait()
		srv.Close()
		s.Shutdown()
		slices.Sort(took)
		if took[0] < tc.min || took[len(took)-1] > tc.max {
			t.Errorf("conns layout %s: interactive calls beside analytical ones holding 4 connections for %v took %v, want each in [%v, %v]",
				tc.layout, hold, took, tc.min, tc.max)
		}
	}
}
