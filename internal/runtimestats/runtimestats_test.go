package runtimestats

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestCollectorSeesSchedulingLatency: goroutines that wake up often while a
// busy one holds the only P must show up as scheduling latency above a
// millisecond (the runtime samples one transition in eight), and both
// histograms are exported under their names.
func TestCollectorSeesSchedulingLatency(t *testing.T) {
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	before := Read()[0]
	after := before
	slow := uint64(0)
	// The runtime samples one transition in eight: repeat a few rounds until
	// the busy goroutine's 10 ms slices have delayed a sampled wake-up.
	for round := 0; round < 10 && slow == 0; round++ {
		stop := time.Now().Add(300 * time.Millisecond)
		done := make(chan struct{})
		go func() {
			for time.Now().Before(stop) {
			}
			done <- struct{}{}
		}()
		for range 32 {
			go func() {
				for time.Now().Before(stop) {
					time.Sleep(100 * time.Microsecond)
				}
				done <- struct{}{}
			}()
		}
		for range 33 {
			<-done
		}
		after = Read()[0]
		slow = (after.Count - after.Cumulative[1e-3]) - (before.Count - before.Cumulative[1e-3])
	}
	if after.Count <= before.Count || slow == 0 {
		t.Errorf("scheduling latency: %d new observations, %d over 1 ms; want some over 1 ms", after.Count-before.Count, slow)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector())
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fams {
		if strings.HasPrefix(f.GetName(), "bulkheadlab_go_cpu_") { // counters: cpu_test.go
			continue
		}
		names = append(names, f.GetName())
		if h := f.GetMetric()[0].GetHistogram(); h == nil || len(h.GetBucket()) != len(Buckets) {
			t.Errorf("%s: not a histogram of %d buckets", f.GetName(), len(Buckets))
		}
	}
	if strings.Join(names, ",") != GCPause+","+SchedLatency {
		t.Errorf("families %v", names)
	}
}
