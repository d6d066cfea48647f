package rundata

import "time"

// JobsRoles name the runs of the background-job claims (seed-004: "bound
// background and job workloads separately from request-serving, so a
// queue drain cannot starve live traffic"). Under Condition a burst of jobs
// arrives on the built-in service's job queue (POST /jobs), drained by
// workers of the service's own process beside its live traffic; Control
// is the run without it.
//
//   - JOBS-STARVE: in Shared (the jobs run on the request pools: a job
//     holds a permit like a request) the drain takes the live endpoints off
//     their baseline, beyond what the control shows.
//   - JOBS-ISOLATED: in each of Bounded (the jobs run on a bounded set of
//     workers of their own) every live endpoint stays at its baseline: its
//     p99 rise over the control's and its error rate within P2's
//     thresholds.
type JobsRoles struct {
	Condition string `yaml:"condition" json:"condition"`
	// Control is the condition compared against (default: the
	// expectations' healthy).
	Control string `yaml:"control,omitempty" json:"control,omitempty"`
	// Shared is the mode whose jobs share the request pools (JOBS-STARVE;
	// none: not judged); Bounded the modes whose jobs run on workers of
	// their own.
	Shared  string   `yaml:"shared,omitempty" json:"shared,omitempty"`
	Bounded []string `yaml:"bounded" json:"bounded"`
	// Live are the endpoints whose traffic the drain must not starve
	// (default: the victim).
	Live []string `yaml:"live,omitempty" json:"live,omitempty"`
}

// WithDefaults returns r with every unset field at its default, from the
// expectations' healthy condition and victim.
func (r JobsRoles) WithDefaults(healthy, victim string) JobsRoles {
	if r.Control == "" {
		r.Control = healthy
	}
	if len(r.Live) == 0 {
		r.Live = []string{victim}
	}
	return r
}

// JobsRoles returns the job claims' roles with their defaults; nil when
// the expectations name none.
func (e Expectations) JobsRoles() *JobsRoles {
	if e.Jobs == nil {
		return nil
	}
	r := e.Jobs.WithDefaults(e.Healthy, e.Victim)
	return &r
}

// JobsInfo is a run's job queue (the built-in service's, POST /jobs) and
// the burst of jobs its condition enqueues, as planned.
type JobsInfo struct {
	// Mode is where the jobs run: JobsShared (on the request pools) or
	// JobsOwn (on workers of their own); Workers the most that run at
	// once, Queue the most that may wait.
	Mode    string `json:"mode"`
	Workers int    `json:"workers"`
	Queue   int    `json:"queue"`
	// Count is how many jobs the condition enqueues at once (0: none), At
	// when, after the fault phase starts.
	Count int           `json:"count,omitempty"`
	At    time.Duration `json:"at_ns,omitempty"`
	// Dependency is the dependency each job calls, Endpoint the service's
	// endpoint through which it does (the label of the queue's metrics).
	Dependency string `json:"dependency,omitempty"`
	Endpoint   string `json:"endpoint,omitempty"`
}

// Where the built-in service's jobs run (service.JobsMode).
const (
	JobsShared = "shared"
	JobsOwn    = "own"
)

// Metric names of the built-in service's job queue (service/jobs.go): the
// jobs waiting, the workers running one and the most that may, the jobs
// the queue accepted, that a worker took, that succeeded and that failed
// (each labelled dependency: the service endpoint whose dependency the
// job calls), and those refused because the queue had no room.
const (
	MetricJobsQueueDepth = "bulkheadlab_jobs_queue_depth"
	MetricJobsQueueLimit = "bulkheadlab_jobs_queue_limit"
	MetricJobsBusy       = "bulkheadlab_jobs_workers_busy"
	MetricJobsWorkers    = "bulkheadlab_jobs_workers"
	MetricJobsEnqueued   = "bulkheadlab_jobs_enqueued_total"
	MetricJobsStarted    = "bulkheadlab_jobs_started_total"
	MetricJobsDone       = "bulkheadlab_jobs_done_total"
	MetricJobsFailed     = "bulkheadlab_jobs_failed_total"
	MetricJobsRefused    = "bulkheadlab_jobs_refused_total"
)
