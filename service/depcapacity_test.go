package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/mgc"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
)

// concurrentTimes sends n GETs to url at once (mgc.Burst) and returns how
// long after their common start each answer had been read, sorted.
func concurrentTimes(t *testing.T, c *http.Client, url string, n int) []time.Duration {
	t.Helper()
	out, err := mgc.Burst(n, func() error {
		resp, err := c.Get(url)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		return err
	})
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return out
}

// TestDepCapacityQueuesFIFO: a stub of capacity C serves C requests at
// once and makes the others wait for a slot, so that 8 requests at once
// are answered after one service time (C of them) or two (the rest);
// unlimited capacity serves all 8 at once, as before capacity existed.
// What an M/G/c server guarantees (the k-th group no earlier than k
// service times) is checked on every attempt. The grouping is checked
// with generous bounds (a gap of half a service time between groups,
// within a second in all), and measured up to 3 times: on 2 busy cores a
// request can be held up by a scheduler for a while.
func TestDepCapacityQueuesFIFO(t *testing.T) {
	const lat = 20 * time.Millisecond
	tests := []struct {
		capacity int
		want     []int // group sizes
	}{
		{capacity: 0, want: []int{8}},
		{capacity: 4, want: []int{4, 4}},
		{capacity: 8, want: []int{8}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("capacity=%d", tt.capacity), func(t *testing.T) {
			url := startDep(t, DepConfig{Latency: lat, Capacity: tt.capacity, Size: 1})
			c := testClient(t)
			var attempts []string
			for attempt := 1; ; attempt++ {
				got := concurrentTimes(t, c, url+"/", 8)
				groups := mgc.Groups(got, lat)
				t.Logf("capacity %d, latency %v, 8 requests at once: %v (groups %v)", tt.capacity, lat, got, groups)
				perGroup := tt.capacity // served at once
				if perGroup == 0 {
					perGroup = len(got)
				}
				if i, floor := mgc.Early(got, perGroup, lat); i >= 0 {
					t.Fatalf("capacity %d: answer %d of 8 after %v, before %v (all: %v)", tt.capacity, i+1, got[i], floor, got)
				}
				if slices.Equal(groups, tt.want) && got[len(got)-1] < time.Second {
					return
				}
				attempts = append(attempts, fmt.Sprintf("%v (groups %v)", got, groups))
				if attempt == 3 {
					t.Errorf("capacity %d: 8 requests at once answered in groups of %v, want %v:\n%s", tt.capacity, groups, tt.want, strings.Join(attempts, "\n"))
					return
				}
			}
		})
	}
}

// TestDepQueueOverflowAndAbandon: with its slot busy and its queue full,
// the stub answers 503 with X-Dep-Overloaded at once; a waiting request
// whose caller goes away leaves the queue; the metrics say so.
func TestDepQueueOverflowAndAbandon(t *testing.T) {
	d, err := NewDep(DepConfig{Latency: time.Hour, Capacity: 1, Queue: 1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	defer srv.Close() // waits for the handlers: hangs if a cancelled one stayed
	c := testClient(t)
	send := func(ctx context.Context) <-chan error {
		done := make(chan error, 1)
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/", nil)
			resp, err := c.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
		return done
	}
	served, cancelServed := context.WithCancel(context.Background())
	defer cancelServed()
	servedDone := send(served)
	testkit.WaitFor(t, 10*time.Second, "the first request to take the slot", func() bool { return d.slots.Snapshot().InUse == 1 })
	waiting, cancelWaiting := context.WithCancel(context.Background())
	defer cancelWaiting()
	waitingDone := send(waiting)
	testkit.WaitFor(t, 10*time.Second, "the second request to queue", func() bool { return d.slots.Snapshot().Waiting == 1 })

	start := time.Now()
	r := get(t, c, srv.URL+"/", nil)
	if r.status != http.StatusServiceUnavailable || r.header.Get(rundata.HeaderDepOverloaded) != "queue-full" || time.Since(start) > 5*time.Second {
		t.Errorf("third request with the queue full: %d %s=%q after %v, want 503 queue-full at once",
			r.status, rundata.HeaderDepOverloaded, r.header.Get(rundata.HeaderDepOverloaded), time.Since(start))
	}
	m := get(t, c, srv.URL+"/metrics", nil).body
	for _, want := range []string{
		rundata.MetricStubCapacity + " 1", "bulkheadlab_dep_queue_limit 1",
		rundata.MetricStubInService + " 1", rundata.MetricStubQueueLength + " 1",
		`bulkheadlab_dep_overloaded_total{reason="queue_full"} 1`, "bulkheadlab_dep_inflight_requests 2",
	} {
		if !strings.Contains(m, want+"\n") {
			t.Errorf("/metrics with one served and one waiting lacks %q", want)
		}
	}

	cancelWaiting()
	if err := <-waitingDone; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled waiting request: %v, want context.Canceled", err)
	}
	testkit.WaitFor(t, 10*time.Second, "the cancelled request to leave the queue", func() bool { return d.slots.Snapshot().Waiting == 0 })
	m = get(t, c, srv.URL+"/metrics", nil).body
	for _, want := range []string{rundata.MetricStubQueueLength + " 0", rundata.MetricStubInService + " 1",
		"bulkheadlab_dep_queue_abandoned_total 1", rundata.MetricStubQueueWaitCount + " 1"} {
		if !strings.Contains(m, want+"\n") {
			t.Errorf("/metrics after the waiting caller left lacks %q", want)
		}
	}
	cancelServed()
	<-servedDone
	testkit.WaitFor(t, 10*time.Second, "the slot to be free", func() bool { return d.slots.Snapshot().InUse == 0 })
}

// TestDepUnlimitedMetrics: a stub without capacity exports the capacity
// series too: capacity 0, nobody waiting, every request in service.
func TestDepUnlimitedMetrics(t *testing.T) {
	d, _ := NewDep(DepConfig{Latency: time.Millisecond})
	if d.slots != nil {
		t.Fatal("a stub of unlimited capacity has a slot pool")
	}
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()
	c := testClient(t)
	if r := get(t, c, srv.URL+"/x", nil); r.status != 200 {
		t.Fatalf("GET /x = %d", r.status)
	}
	m := get(t, c, srv.URL+"/metrics", nil).body
	for _, want := range []string{rundata.MetricStubCapacity + " 0", rundata.MetricStubInService + " 0",
		rundata.MetricStubQueueLength + " 0", rundata.MetricStubQueueWaitCount + " 0",
		"bulkheadlab_dep_requests_total 1", "bulkheadlab_dep_inflight_requests 0"} {
		if !strings.Contains(m, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
