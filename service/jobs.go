package service

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/prometheus/client_golang/prometheus"
)

// JobsMode is where the service's background jobs run.
type JobsMode string

const (
	// JobsShared: a job holds a permit of its dependency's request pool
	// for its call, like a request: a drain of the job queue competes with
	// live traffic for the same permits (and, with enough workers, takes
	// them all).
	JobsShared JobsMode = rundata.JobsShared
	// JobsOwn: jobs run on a bounded worker pool of their own and never
	// touch the request pools: at most JobsConfig.Workers jobs run at once
	// whatever the queue holds.
	JobsOwn JobsMode = rundata.JobsOwn
)

// DefaultJobsQueue is the job queue's length when JobsConfig.Queue is 0.
const DefaultJobsQueue = 10000

// jobRetryInterval is how long a job waits before asking its request pool
// again after the pool refused it (shared mode): it is not dropped.
const jobRetryInterval = 2 * time.Millisecond

// JobsConfig configures the service's in-process job queue: POST
// /jobs?n=K[&dependency=NAME] enqueues K jobs, each one call of the named
// endpoint's dependency under T, drained in FIFO order by Workers workers
// of the service's own process.
type JobsConfig struct {
	// Mode is JobsShared or JobsOwn.
	Mode JobsMode
	// Workers is how many jobs run at once at most (≥ 1): in shared mode
	// each also needs a permit of the request pool.
	Workers int
	// Queue is the most jobs waiting at once (0: DefaultJobsQueue); a POST
	// that does not fit is refused whole (503).
	Queue int
	// Dependency is the endpoint whose dependency a job calls when the POST
	// names none ("": the first endpoint).
	Dependency string
}

// ParseJobsMode parses "shared" or "own"; the error is a *ConfigError on
// jobs_mode.
func ParseJobsMode(s string) (JobsMode, error) {
	switch m := JobsMode(s); m {
	case JobsShared, JobsOwn:
		return m, nil
	}
	return "", fieldErrorf("jobs_mode", "must be %q or %q, got %q", JobsShared, JobsOwn, s)
}

// validate reports the first invalid field as a *ConfigError (jobs_mode,
// jobs_workers, jobs_queue, jobs_dependency).
func (jc JobsConfig) validate(endpoints []string, pools []PoolSpec) error {
	if _, err := ParseJobsMode(string(jc.Mode)); err != nil {
		return err
	}
	switch {
	case jc.Mode == JobsShared && len(pools) == 0:
		return fieldErrorf("jobs_mode", "shared runs jobs on the request pools, and the layout has none")
	case jc.Workers < 1 || jc.Workers > 4096:
		return fieldErrorf("jobs_workers", "must be between 1 and 4096, got %d", jc.Workers)
	case jc.Queue < 0 || jc.Queue > 1<<20:
		return fieldErrorf("jobs_queue", "must be between 0 (%d) and %d, got %d", DefaultJobsQueue, 1<<20, jc.Queue)
	case jc.Dependency != "" && !slices.Contains(endpoints, jc.Dependency):
		return fieldErrorf("jobs_dependency", "no endpoint %q", jc.Dependency)
	}
	if slices.Contains(endpoints, "jobs") {
		return fieldErrorf("endpoints.jobs", "the name is the job queue's path (POST /jobs) when jobs are on")
	}
	return nil
}

// job is one queued call of a dependency.
type job struct{ dep string }

// jobRunner is the job queue and its workers. Workers are started as jobs
// arrive (at most Workers) and end when the queue is empty, so an idle
// service runs none. Safe for concurrent use.
type jobRunner struct {
	s       *Service
	mode    JobsMode
	workers int
	limit   int
	def     string

	mu      sync.Mutex
	pending []job // FIFO
	running int   // workers started and not yet ended
	stopped bool
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	m jobMetrics
}

type jobMetrics struct {
	depth, busy, workers, queueLimit prometheus.Gauge
	enqueued, started, done, failed  *prometheus.CounterVec
	refused                          prometheus.Counter
}

func newJobRunner(s *Service, jc JobsConfig, r prometheus.Registerer) *jobRunner {
	j := &jobRunner{s: s, mode: jc.Mode, workers: jc.Workers, limit: jc.Queue, def: jc.Dependency}
	if j.limit == 0 {
		j.limit = DefaultJobsQueue
	}
	if j.def == "" {
		j.def = s.cfg.Endpoints[0].Name
	}
	j.ctx, j.cancel = context.WithCancel(context.Background())
	g := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	c := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"dependency"})
	}
	j.m = jobMetrics{
		depth:      g(rundata.MetricJobsQueueDepth, "Jobs waiting for a worker."),
		queueLimit: g(rundata.MetricJobsQueueLimit, "The most jobs that may wait at once."),
		busy:       g(rundata.MetricJobsBusy, "Workers running a job (in shared mode, waiting for or holding a request pool's permit included)."),
		workers:    g(rundata.MetricJobsWorkers, "The most jobs that run at once."),
		enqueued:   c(rundata.MetricJobsEnqueued, "Jobs the queue accepted at POST /jobs, by dependency."),
		started:    c(rundata.MetricJobsStarted, "Jobs a worker took from the queue, by dependency."),
		done:       c(rundata.MetricJobsDone, "Jobs whose call succeeded, by dependency."),
		failed:     c(rundata.MetricJobsFailed, "Jobs whose call failed (error or timeout), by dependency."),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Name: rundata.MetricJobsRefused,
			Help: "Jobs refused at POST /jobs because the queue had no room for them."}),
	}
	r.MustRegister(j.m.depth, j.m.queueLimit, j.m.busy, j.m.workers, j.m.enqueued, j.m.started, j.m.done, j.m.failed, j.m.refused)
	j.m.queueLimit.Set(float64(j.limit))
	j.m.workers.Set(float64(j.workers))
	for _, e := range s.cfg.EndpointNames() {
		j.m.enqueued.WithLabelValues(e)
		j.m.started.WithLabelValues(e)
		j.m.done.WithLabelValues(e)
		j.m.failed.WithLabelValues(e)
	}
	return j
}

// errJobsFull and errJobsStopped refuse a POST /jobs.
var (
	errJobsFull    = errors.New("job queue full")
	errJobsStopped = errors.New("job queue stopped")
)

// enqueue queues n jobs of dep, all or none, and starts the workers they
// need.
func (j *jobRunner) enqueue(dep string, n int) (depth int, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case j.stopped:
		return len(j.pending), errJobsStopped
	case len(j.pending)+n > j.limit:
		j.m.refused.Add(float64(n))
		return len(j.pending), errJobsFull
	}
	for range n {
		j.pending = append(j.pending, job{dep: dep})
	}
	j.m.enqueued.WithLabelValues(dep).Add(float64(n))
	for j.running < j.workers && j.running < len(j.pending) {
		j.running++
		j.m.busy.Inc()
		j.wg.Go(j.work)
	}
	j.m.depth.Set(float64(len(j.pending)))
	return len(j.pending), nil
}

// work runs jobs until the queue is empty or the runner stops.
func (j *jobRunner) work() {
	for {
		j.mu.Lock()
		if len(j.pending) == 0 || j.stopped {
			j.running--
			j.m.busy.Dec()
			j.mu.Unlock()
			return
		}
		jb := j.pending[0]
		j.pending[0] = job{}
		j.pending = j.pending[1:]
		j.m.depth.Set(float64(len(j.pending)))
		j.mu.Unlock()
		j.run(jb)
	}
}

// run makes one job's call: in shared mode holding a permit of its
// dependency's request pool, asked again until it grants one.
func (j *jobRunner) run(jb job) {
	j.m.started.WithLabelValues(jb.dep).Inc()
	if j.mode == JobsShared {
		pool := j.s.layout.Pool(jb.dep)
		for {
			permit, err := pool.Acquire(j.ctx)
			if err == nil {
				defer permit.Release()
				break
			}
			select {
			case <-j.ctx.Done():
				return // stopped: the job neither succeeded nor failed
			case <-time.After(jobRetryInterval):
			}
		}
	}
	ctx, cancel := context.WithTimeout(j.ctx, j.s.cfg.Timeout)
	defer cancel()
	id := j.s.idPrefix + "-job-" + strconv.FormatUint(j.s.nextID.Add(1), 10)
	res := j.s.deps[jb.dep].call(ctx, id, j.s.cfg.MaxBodyBytes)
	switch {
	case res.outcome == outcomeOK:
		j.m.done.WithLabelValues(jb.dep).Inc()
	case j.ctx.Err() == nil:
		j.m.failed.WithLabelValues(jb.dep).Inc()
	}
}

// stop drops the queued jobs, cancels the running ones and waits for the
// workers to end; later POSTs are refused. Idempotent.
func (j *jobRunner) stop() {
	j.mu.Lock()
	j.stopped = true
	j.pending = nil
	j.m.depth.Set(0)
	j.mu.Unlock()
	j.cancel()
	j.wg.Wait()
}

// snapshot returns the queue's depth and the busy workers.
func (j *jobRunner) snapshot() (depth, busy int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.pending), j.running
}

// MaxJobsPerPost bounds n of one POST /jobs.
const MaxJobsPerPost = 1 << 16

// handle serves POST /jobs?n=K[&dependency=NAME]: 202 with the queue's
// depth, 400 for a bad n or dependency, 503 (X-Bulkhead-Reject: jobs)
// when the queue has no room for all K.
func (j *jobRunner) handle(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	n, err := strconv.Atoi(q.Get("n"))
	if q.Get("n") == "" {
		n, err = 1, nil
	}
	dep := q.Get("dependency")
	if dep == "" {
		dep = j.def
	}
	switch {
	case err != nil || n < 1 || n > MaxJobsPerPost:
		writeJSON(w, http.StatusBadRequest, errorBody{Error: fmt.Sprintf("n must be an integer between 1 and %d, got %q", MaxJobsPerPost, q.Get("n")), Reason: "bad-request"})
		return
	case j.s.deps[dep] == nil:
		writeJSON(w, http.StatusBadRequest, errorBody{Error: fmt.Sprintf("no endpoint %q", dep), Reason: "bad-request"})
		return
	}
	depth, err := j.enqueue(dep, n)
	if err != nil {
		w.Header().Set(rundata.HeaderBulkheadReject, "jobs")
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: fmt.Sprintf("%v: %d queued, %d more do not fit", err, depth, n), Reason: "jobs"})
		return
	}
	writeJSON(w, http.StatusAccepted, struct {
		Enqueued int `json:"enqueued"`
		Queued   int `json:"queued"`
	}{n, depth})
}
