package service

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
)

// post sends POST url and returns its reply.
func post(t *testing.T, c *http.Client, url string) reply {
	t.Helper()
	return send(t, c, http.MethodPost, url, nil)
}

// TestJobsStarveLiveTraffic: a drain of 40 queued jobs (each a 40 ms call
// of A) runs while /b, a fast dependency, is called through the same
// shared pool. When the jobs run on the request pool, with more workers
// than permits, they hold every permit and /b is refused most of the time;
// on a bounded worker pool of their own they never touch the request pool
// and /b is served every time.
func TestJobsStarveLiveTraffic(t *testing.T) {
	const p, jobs, bCalls = 4, 40, 20
	for _, tt := range []struct {
		mode    JobsMode
		workers int
		isolate bool
	}{
		{JobsShared, 2 * p, false},
		{JobsOwn, p, true},
	} {
		t.Run(string(tt.mode), func(t *testing.T) {
			depA := startDep(t, DepConfig{Name: "A", Latency: 40 * time.Millisecond})
			depB := startDep(t, DepConfig{Name: "B", Latency: time.Millisecond, Size: 2})
			svc, url := startService(t, Config{Layout: LayoutConfig{Mode: ModeShared, PoolSize: p},
				Timeout: time.Second, Endpoints: TwoEndpoints(depA, depB),
				Jobs: &JobsConfig{Mode: tt.mode, Workers: tt.workers, Dependency: EndpointA}})
			t.Cleanup(svc.Shutdown)
			c := testClient(t)
			if r := post(t, c, url+"/jobs?n="+itoa(jobs)); r.status != http.StatusAccepted || !strings.Contains(r.body, `"enqueued":40`) {
				t.Fatalf("POST /jobs: %d %q, want 202 enqueued 40", r.status, r.body)
			}
			ok := 0
			for range bCalls {
				if r := get(t, c, url+"/b", nil); r.status == http.StatusOK {
					ok++
				}
				time.Sleep(5 * time.Millisecond)
			}
			depth, busy := svc.jobs.snapshot()
			testkit.WaitFor(t, 10*time.Second, "the job queue to drain", func() bool { d, b := svc.jobs.snapshot(); return d == 0 && b == 0 })
			t.Logf("jobs %s (%d workers, pool of %d): /b %d of %d ok during the drain (%d queued, %d workers busy after the calls)", tt.mode, tt.workers, p, ok, bCalls, depth, busy)
			if depth == 0 {
				t.Errorf("the drain ended before /b's calls did: the test measured nothing")
			}
			switch {
			case tt.isolate && ok != bCalls:
				t.Errorf("jobs on workers of their own: /b %d of %d ok, want all", ok, bCalls)
			case !tt.isolate && ok > bCalls/3:
				t.Errorf("jobs on the request pool: /b %d of %d ok, want at most a third (the drain holds the pool)", ok, bCalls)
			}
			m := svc.jobs.m
			for _, c := range []struct {
				name string
				got  float64
			}{
				{"started", metricValue(t, m.started.WithLabelValues("a"))},
				{"done", metricValue(t, m.done.WithLabelValues("a"))},
			} {
				if c.got != jobs {
					t.Errorf("jobs %s: %v, want %d", c.name, c.got, jobs)
				}
			}
			if f, d := metricValue(t, m.failed.WithLabelValues("a")), metricValue(t, m.depth); f != 0 || d != 0 {
				t.Errorf("after the drain: %v failed, depth %v; want 0, 0", f, d)
			}
		})
	}
}

// TestJobsQueue: a POST that does not fit the queue is refused whole, a
// bad one is a 400, and Shutdown cancels the running job and drops the
// queued ones without counting them as failed.
func TestJobsQueue(t *testing.T) {
	heldA := startHeldDep(t, 1)
	svc, url := startService(t, Config{Layout: LayoutConfig{Mode: ModeBulkhead, PoolSize: 2},
		Timeout: 30 * time.Second, Endpoints: TwoEndpoints(heldA.url, heldA.url),
		Jobs: &JobsConfig{Mode: JobsOwn, Workers: 1, Queue: 3}})
	c := testClient(t)
	if r := post(t, c, url+"/jobs?n=3"); r.status != http.StatusAccepted {
		t.Fatalf("POST n=3: %d %q", r.status, r.body)
	}
	heldA.awaitArrivals(t, 1) // the worker took one: 2 queued
	for _, tt := range []struct {
		query  string
		status int
	}{
		{"n=2", http.StatusServiceUnavailable},
		{"n=x", http.StatusBadRequest},
		{"n=0", http.StatusBadRequest},
		{"n=1&dependency=zz", http.StatusBadRequest},
		{"dependency=b", http.StatusAccepted},
	} {
		r := post(t, c, url+"/jobs?"+tt.query)
		if r.status != tt.status {
			t.Errorf("POST /jobs?%s: %d %q, want %d", tt.query, r.status, r.body, tt.status)
		}
		if r.status == http.StatusServiceUnavailable && r.header.Get(rundata.HeaderBulkheadReject) != "jobs" {
			t.Errorf("POST /jobs?%s refused without X-Bulkhead-Reject: jobs", tt.query)
		}
	}
	var status struct{ Queued int }
	if r := post(t, c, url+"/jobs?n=1"); r.status != http.StatusServiceUnavailable {
		t.Errorf("POST to a full queue: %d %q, want 503", r.status, r.body)
	} else if err := json.Unmarshal([]byte(r.body), &status); err != nil {
		t.Error(err)
	}
	m := get(t, c, url+"/metrics", nil).body
	for _, want := range []string{"bulkheadlab_jobs_queue_depth 3", "bulkheadlab_jobs_workers_busy 1", "bulkheadlab_jobs_workers 1",
		"bulkheadlab_jobs_refused_total 3", `bulkheadlab_jobs_started_total{dependency="a"} 1`,
		`bulkheadlab_jobs_enqueued_total{dependency="a"} 3`, `bulkheadlab_jobs_enqueued_total{dependency="b"} 1`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	svc.Shutdown()
	if d, b := svc.jobs.snapshot(); d != 0 || b != 0 {
		t.Errorf("after Shutdown: %d queued, %d busy; want none", d, b)
	}
	if f := metricValue(t, svc.jobs.m.failed.WithLabelValues("a")); f != 0 {
		t.Errorf("the cancelled job counted as failed (%v)", f)
	}
	if r := post(t, c, url+"/jobs"); r.status != http.StatusServiceUnavailable {
		t.Errorf("POST after Shutdown: %d, want 503", r.status)
	}
}

// TestJobsNamesAreTheContract: the modes and the metric names the analysis
// reads (package rundata) are the queue's own.
func TestJobsNamesAreTheContract(t *testing.T) {
	if string(JobsShared) != rundata.JobsShared || string(JobsOwn) != rundata.JobsOwn {
		t.Errorf("modes %s, %s; rundata says %s, %s", JobsShared, JobsOwn, rundata.JobsShared, rundata.JobsOwn)
	}
	depA := startDep(t, DepConfig{Name: "A", Latency: time.Millisecond})
	svc, url := startService(t, Config{Layout: LayoutConfig{Mode: ModeShared, PoolSize: 2},
		Timeout: time.Second, Endpoints: TwoEndpoints(depA, depA), Jobs: &JobsConfig{Mode: JobsOwn, Workers: 1}})
	t.Cleanup(svc.Shutdown)
	m := get(t, testClient(t), url+"/metrics", nil).body
	for _, name := range []string{rundata.MetricJobsQueueDepth, rundata.MetricJobsQueueLimit, rundata.MetricJobsBusy, rundata.MetricJobsWorkers,
		rundata.MetricJobsEnqueued, rundata.MetricJobsStarted, rundata.MetricJobsDone, rundata.MetricJobsFailed, rundata.MetricJobsRefused} {
		if !strings.Contains(m, "\n"+name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
}
