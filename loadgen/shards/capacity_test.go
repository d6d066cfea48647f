package shards

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/loadgen"
)

// TestShardCapacity steps the total rate sent by N shards (agents in this
// process, the runner merging in it too) against a trivial target and
// prints the highest valid rate per shard count. It measures the machine,
// so it runs only with BULKHEADLAB_CAPACITY=1 (and without -race):
//
//	BULKHEADLAB_CAPACITY=1 go test -run TestShardCapacity -v ./loadgen/shards/
//
// BULKHEADLAB_CAPACITY_SHARDS lists the shard counts (default 1,4),
// BULKHEADLAB_CAPACITY_RATES the total rates.
func TestShardCapacity(t *testing.T) {
	if os.Getenv("BULKHEADLAB_CAPACITY") != "1" {
		t.Skip("set BULKHEADLAB_CAPACITY=1 to measure capacity")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	t.Cleanup(srv.Close)
	counts := ints(t, os.Getenv("BULKHEADLAB_CAPACITY_SHARDS"), []float64{1, 4})
	rates := ints(t, os.Getenv("BULKHEADLAB_CAPACITY_RATES"), []float64{2000, 4000, 6000, 8000, 10000, 12000})
	for _, n := range counts {
		best := 0.0
		for _, total := range rates {
			cfg := loadgen.Config{
				Targets: []loadgen.Target{{Name: "a", URL: srv.URL + "/a", Rate: total / 2}, {Name: "b", URL: srv.URL + "/b", Rate: total / 2}},
				Phases:  []loadgen.Phase{{Name: "warmup", Duration: time.Second}, {Name: "measure", Duration: 4 * time.Second}},
				Timeout: 2 * time.Second, ExcludeFromValidity: []string{"warmup"},
				Remote: agents(t, int(n), nil),
			}
			rep, err := loadgen.Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, ps := range rep.Phases {
				if ps.Phase == "measure" {
					t.Logf("%3.0f shards, total %6.0f/s  %s: achieved %8.1f/s  lag p99 %-12v valid %v %v",
						n, total, ps.Endpoint, ps.AchievedRate, ps.LagP99, ps.Valid, ps.Broken)
				}
			}
			if rep.Valid {
				best = total
			}
		}
		t.Logf("%.0f shards: highest valid total rate %.0f req/s (%.0f per shard)", n, best, best/n)
	}
}

func ints(t *testing.T, s string, def []float64) []float64 {
	if s == "" {
		return def
	}
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		out = append(out, v)
	}
	return out
}
