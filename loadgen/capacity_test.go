package loadgen

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"
)

// TestCapacity steps the total rate (two endpoints, half each) against an
// in-process trivial target and prints the highest rate whose run stays
// valid. It measures the machine, so it runs only with BULKHEADLAB_CAPACITY=1
// (and without -race):
//
//	BULKHEADLAB_CAPACITY=1 go test -run TestCapacity -v ./loadgen/
func TestCapacity(t *testing.T) {
	if os.Getenv("BULKHEADLAB_CAPACITY") != "1" {
		t.Skip("set BULKHEADLAB_CAPACITY=1 to measure capacity")
	}
	url := okServer(t).URL
	if u := os.Getenv("BULKHEADLAB_CAPACITY_URL"); u != "" {
		url = u // an out-of-process target, e.g. to compare with the vegeta CLI
	}
	steps := []float64{2000, 4000, 5000, 6000, 8000, 10000, 12000, 15000}
	if s := os.Getenv("BULKHEADLAB_CAPACITY_RATES"); s != "" {
		steps = nil
		for _, f := range splitComma(s) {
			if v, err := strconv.ParseFloat(f, 64); err == nil {
				steps = append(steps, v)
			}
		}
	}
	best := 0.0
	for _, total := range steps {
		cfg := Config{
			Targets: []Target{{Name: "a", URL: url + "/a", Rate: total / 2}, {Name: "b", URL: url + "/b", Rate: total / 2}},
			Phases:  []Phase{{Name: "warmup", Duration: time.Second}, {Name: "measure", Duration: 4 * time.Second}},
			Timeout: 2 * time.Second, ExcludeFromValidity: []string{"warmup"},
		}
		rep, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, ps := range rep.Phases {
			if ps.Phase == "measure" {
				t.Logf("total %6.0f/s  %s: achieved %8.1f/s  lag p99 %-12v max %-12v latency p50 %-10v p99 %-10v valid %v %v",
					total, ps.Endpoint, ps.AchievedRate, ps.LagP99, ps.LagMax, ps.Latency.P50, ps.Latency.P99, ps.Valid, ps.Broken)
			}
		}
		if rep.Valid {
			best = total
		}
	}
	t.Logf("highest valid total rate: %.0f req/s", best)
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}
