package spec

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/loadgen"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// jobsPart is a spec as its background-jobs family sees it: the jobs, their
// flow and expectations.jobs.
type jobsPart struct{ *Spec }

// Background jobs (seed-004: "bound background and job workloads
// separately from request-serving, so a queue drain cannot starve live
// traffic"). The built-in service has a job queue (service/jobs.go) that
// workers of its own process drain; a mode says where they run, a
// condition enqueues a burst of jobs during the fault phase:
//
//	modes:
//	  - {name: shared-workers, pools: shared, jobs: {mode: shared, workers: 32}}  # a job holds a request permit
//	  - {name: own-workers, pools: shared, jobs: {mode: own, workers: 8}}         # 8 workers of their own
//	conditions:
//	  - healthy
//	  - {name: drain, dependency: billing, jobs: {count: 1000}}
//
// The burst is one POST /jobs?n=COUNT&dependency=PATH the load generator
// sends at fault start + at; each job is one call of the dependency, made
// through the service's endpoint that calls it.

// Jobs is a mode's job queue of the built-in service (service.JobsConfig).
type Jobs struct {
	// Mode is where the jobs run: shared (on the request pools: a job
	// holds a permit of its dependency's pool for its call, like a
	// request) or own (on Workers workers of their own, which never touch
	// the request pools).
	Mode string `yaml:"mode"`
	// Workers is the most jobs that run at once (in shared mode each also
	// needs a permit).
	Workers int `yaml:"workers"`
	// Queue is the most jobs that may wait at once (0: the service's
	// default, service.DefaultJobsQueue); a burst that does not fit is
	// refused whole.
	Queue int `yaml:"queue,omitempty"`
}

// config is j as the service takes it; nil for none.
func (j *Jobs) config() *service.JobsConfig {
	if j == nil {
		return nil
	}
	return &service.JobsConfig{Mode: service.JobsMode(j.Mode), Workers: j.Workers, Queue: j.Queue}
}

// queueLimit is the most jobs j's queue holds.
func (j *Jobs) queueLimit() int {
	if j.Queue > 0 {
		return j.Queue
	}
	return service.DefaultJobsQueue
}

// JobsBurst is a condition's burst of jobs: Count jobs enqueued at once on
// the built-in service's job queue, At after the fault phase starts, each
// one call of Dependency.
type JobsBurst struct {
	Count int `yaml:"count"`
	// At is when the jobs arrive, from the fault phase's start (default
	// 0; relative to T allowed: 2T).
	At Duration `yaml:"at,omitempty"`
	// Dependency is what each job calls (default: the condition's
	// dependency, the culprit's unless it names another).
	Dependency string `yaml:"dependency,omitempty"`
}

// jobsDependency is the dependency condition c's jobs call.
func (c *Condition) jobsDependency() string {
	if c.Jobs != nil && c.Jobs.Dependency != "" {
		return c.Jobs.Dependency
	}
	return c.Dependency
}

// jobsEndpoint is the endpoint through which a job calls dependency dep:
// the first that calls it; false for none.
func (s jobsPart) jobsEndpoint(dep string) (Endpoint, bool) {
	for _, e := range s.Endpoints {
		if e.Dependency == dep {
			return e, true
		}
	}
	return Endpoint{}, false
}

// jobsInfo is what a run of condition c in mode m records of its job
// queue and burst; nil without a queue.
func (s jobsPart) jobsInfo(c *Condition, m *Mode) *rundata.JobsInfo {
	j := m.Jobs
	if j == nil || s.External != nil {
		return nil
	}
	info := &rundata.JobsInfo{Mode: j.Mode, Workers: j.Workers, Queue: j.queueLimit()}
	if b := c.Jobs; b != nil {
		info.Count, info.At, info.Dependency = b.Count, b.At.D, c.jobsDependency()
		if e, ok := s.jobsEndpoint(info.Dependency); ok {
			info.Endpoint = e.servicePath()
		}
	}
	return info
}

// jobsBurst is the load generator's burst that enqueues run r's jobs: one
// POST /jobs?n=COUNT&dependency=PATH to the service (through its first
// endpoint's target) at the fault phase's start (faultAt) plus the burst's
// at; false when the condition sends none.
func (s jobsPart) jobsBurst(r Run, faultAt time.Duration) (loadgen.Burst, bool) {
	b := r.Condition.Jobs
	e, ok := s.jobsEndpoint(r.Condition.jobsDependency())
	if b == nil || !ok || len(s.Endpoints) == 0 {
		return loadgen.Burst{}, false
	}
	q := url.Values{"n": {strconv.Itoa(b.Count)}, "dependency": {e.servicePath()}}
	return loadgen.Burst{Label: "jobs-" + r.Condition.Name, Target: s.Endpoints[0].Name, Requests: 1, At: faultAt + b.At.D,
		Method: "POST", Path: "/jobs?" + q.Encode()}, true
}

// jobsFlow is, for Little's-law previews, the burst of condition c in a
// pool of mode m when its jobs run on the request pools: the jobs hold at
// most min(workers, count) permits of the pool their endpoint draws from,
// from the burst on, each for a call of their dependency. ok is false when
// they hold none of pool pl.
func (s jobsPart) jobsFlow(c *Condition, m *Mode, pl PoolLayout) (f flow, at time.Duration, ok bool) {
	j, b := m.Jobs, c.Jobs
	if j == nil || b == nil || j.Mode != string(service.JobsShared) || pl.Nested {
		return flow{}, 0, false
	}
	e, found := s.jobsEndpoint(c.jobsDependency())
	if !found || !slices.Contains(pl.Endpoints, e.Name) {
		return flow{}, 0, false
	}
	w := s.holdingTime(e.Dependency, c, e.Name).Seconds()
	return flow{rate1: math.Inf(1), w1: w, cap: float64(min(j.Workers, b.Count))}, b.At.D, true
}

// jobsFieldPath maps a service.ConfigError field of the job queue to mode
// i's field path.
func (s jobsPart) jobsFieldPath(mode int, field string) (string, bool) {
	if field == "endpoints.jobs" {
		for k, e := range s.Endpoints {
			if e.servicePath() == "jobs" {
				if e.Path != "" {
					return fmt.Sprintf("endpoints[%d].path", k), true
				}
				return fmt.Sprintf("endpoints[%d].name", k), true
			}
		}
	}
	key, ok := map[string]string{"jobs_mode": "mode", "jobs_workers": "workers", "jobs_queue": "queue"}[field]
	if !ok {
		return "", false
	}
	return fmt.Sprintf("modes[%d].jobs.%s", mode, key), true
}

// validateJobs checks the conditions' bursts of jobs and the modes' job
// queues beyond the service's own rules (validateService applies those),
// then expectations.jobs.
func (s jobsPart) validateJobs(p *problems) {
	for i, m := range s.Modes {
		if m.Jobs != nil && s.External != nil {
			p.add(fmt.Sprintf("modes[%d].jobs", i), "is the built-in service's job queue; your own service runs its background work as it does")
		}
	}
	for i := range s.Conditions {
		c := &s.Conditions[i]
		b := c.Jobs
		if b == nil {
			continue
		}
		path := fmt.Sprintf("conditions[%d].jobs", i)
		if s.External != nil {
			p.add(path, "enqueues jobs on the built-in service's job queue (POST /jobs); your own service's queue is its own: "+
				"send its jobs from an endpoint of the spec (endpoints[i].method, .body) with a rate in this condition")
			continue
		}
		if b.Count < 1 || b.Count > service.MaxJobsPerPost {
			p.add(path+".count", "must be between 1 and %d, got %d", service.MaxJobsPerPost, b.Count)
		}
		if f := s.Phases.Fault.D; b.At.D < 0 || b.At.D >= f {
			p.add(path+".at", "must be in [0, the fault phase (%v)), got %v", f, b.At.D)
		}
		// The condition's own dependency is validateConditions' to check.
		if _, ok := s.jobsEndpoint(b.Dependency); b.Dependency != "" && !ok {
			p.add(path+".dependency", "no endpoint calls %q: a job calls a dependency through the service's endpoint that calls it (one of %s)",
				b.Dependency, strings.Join(s.DependencyNames(), ", "))
		}
		for j := range s.Modes {
			m := &s.Modes[j]
			switch {
			case m.Jobs == nil:
				p.add(fmt.Sprintf("modes[%d]", j), "%s: conditions[%d] (%s) enqueues jobs and this mode has no job queue: give it jobs: {mode: shared, workers: N} "+
					"(jobs on the request pools) or {mode: own, workers: N} (workers of their own)", m.Name, i, c.Name)
			case b.Count > m.Jobs.queueLimit() && b.Count <= service.MaxJobsPerPost:
				p.add(path+".count", "%d jobs do not fit mode %s's queue of %d (modes[%d].jobs.queue): the service would refuse them all", b.Count, m.Name, m.Jobs.queueLimit(), j)
			case s.InstancesOf(m) > 1:
				p.add(path, "mode %s runs %d instances, each with a queue of its own: the jobs go to one service (instances: 1)", m.Name, s.InstancesOf(m))
			}
		}
	}
	s.validateJobsRoles(p)
}

// validateJobsRoles checks expectations.jobs: its condition sends jobs and
// its control none, its modes are in the matrix and its live endpoints are
// endpoints.
func (s jobsPart) validateJobsRoles(p *problems) {
	if s.Expectations.Jobs == nil {
		return
	}
	const path = "expectations.jobs."
	r := s.Expectations.JobsRoles()
	s.checkConditionAndControl(p, path, r.Condition, r.Control, "the condition whose burst of jobs drains beside the live traffic")
	if c := s.condition(r.Condition); c != nil && c.Jobs == nil {
		p.add(path+"condition", "condition %q enqueues no jobs: give it jobs: {count: N}", r.Condition)
	}
	if c := s.condition(r.Control); c != nil && c.Jobs != nil && r.Control != r.Condition {
		p.add(path+"control", "condition %q enqueues jobs too: the control is the run without a drain (default: expectations.healthy)", r.Control)
	}
	s.checkRoleModes(p, path, "bounded", r.Shared, r.Bounded, "the modes whose jobs run on workers of their own (jobs: {mode: own, workers: N})") // tenants.go
	for i, e := range r.Live {
		switch {
		case !s.hasEndpoint(e):
			p.add(fmt.Sprintf("%slive[%d]", path, i), "no endpoint %q (default: expectations.victim; endpoints: %s)", e, strings.Join(s.EndpointNames(), ", "))
		case slices.Index(r.Live, e) < i:
			p.add(fmt.Sprintf("%slive[%d]", path, i), "%q is named already", e)
		}
	}
}

// jobsWarnings says when a mode whose jobs run on the request pools has
// too few workers for a burst to hold its pool: the drain then leaves
// permits to the live traffic, and shows no starvation.
func (s jobsPart) jobsWarnings() []string {
	if s.External != nil {
		return nil
	}
	var out []string
	for i := range s.Conditions {
		c := &s.Conditions[i]
		if c.Jobs == nil {
			continue
		}
		for j := range s.Modes {
			m := &s.Modes[j]
			for _, pl := range s.Pools(m) {
				if _, _, ok := s.jobsFlow(c, m, pl); !ok {
					continue
				}
				if held := min(m.Jobs.Workers, c.Jobs.Count); held < pl.Limit {
					out = append(out, fmt.Sprintf("modes[%d] (%s): the jobs of %s hold at most %d of pool %s's %d permits (jobs.workers: %d): "+
						"the drain leaves the live traffic the rest", j, m.Name, c.Name, held, pl.Name, pl.Limit, m.Jobs.Workers))
				}
			}
		}
	}
	return out
}
