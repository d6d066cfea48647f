package rundata

import (
	"encoding/json"
	"math"
	"time"
)

// Index is index.json: the expanded matrix in execution order.
type Index struct {
	Experiment string       `json:"experiment"`
	Started    time.Time    `json:"started"`
	Ended      time.Time    `json:"ended,omitzero"`
	Runs       []IndexEntry `json:"runs"`
}

// IndexEntry is one run of the matrix.
type IndexEntry struct {
	ID        string `json:"id"`        // e.g. "slow-shared-r1"; also the folder name under runs/
	Mode      string `json:"mode"`      // "shared" or "bulkhead"
	Condition string `json:"condition"` // "healthy", "slow", "failing", "busy" or user-defined
	Repeat    int    `json:"repeat"`    // 1-based
	Status    string `json:"status"`
}

// RunMeta is meta.json: everything needed to interpret one run's data.
type RunMeta struct {
	Experiment string    `json:"experiment"`
	ID         string    `json:"id"`
	Mode       string    `json:"mode"`
	Condition  string    `json:"condition"`
	Repeat     int       `json:"repeat"`
	Seed       int64     `json:"seed"`
	Status     string    `json:"status"`
	Started    time.Time `json:"started"`
	Ended      time.Time `json:"ended,omitzero"`
	// Versions of the binary and Go runtime.
	Versions map[string]string `json:"versions,omitempty"`

	// Timeout is T, the service→dependency timeout.
	Timeout time.Duration `json:"timeout_ns"`
	// ClientTimeout is the load generator's request timeout.
	ClientTimeout time.Duration `json:"client_timeout_ns"`
	// Window is the recording window length.
	Window time.Duration `json:"window_ns"`
	// Endpoints describes each loaded endpoint.
	Endpoints []EndpointInfo `json:"endpoints"`
	// External is set when the service under test is a user's own: the
	// harness knows of it only what the spec declares and what it measures.
	External bool `json:"external,omitempty"`
	// TimingRoles are the Server-Timing metric names the spec declares as
	// wait, work or left out (external.timing); the rest take
	// DefaultTimingRole.
	TimingRoles *TimingRoles `json:"server_timing_roles,omitempty"`
	// TimingHistograms are the service's histograms the spec declares as
	// waits or work (external.timing.histograms).
	TimingHistograms *TimingHistograms `json:"timing_histograms,omitempty"`
	// Canary describes the canary (CanaryEndpoint in the windows and
	// phases), if the run had one.
	Canary *CanaryInfo `json:"canary,omitempty"`
	// Pools describes each pool of the service (one in shared mode); for a
	// fleet, each pool of the fleet: every instance's pool of that name
	// together (limit and queue summed over the instances).
	Pools []PoolInfo `json:"pools"`
	// Instances are the components of the service's instances when it ran
	// as a fleet of more than one (InstanceComponent); empty: one instance,
	// ServiceComponent.
	Instances []string `json:"instances,omitempty"`
	// InstanceEndpoints, when the service ran as a process per pool (a
	// mode with processes: per-endpoint) rather than as a fleet, are the
	// endpoints each of Instances served: each endpoint's load went to its
	// process alone, and each pool of Pools is one process's, whole.
	InstanceEndpoints map[string][]string `json:"instance_endpoints,omitempty"`
	// Sweep, for a run of a swept spec, names the mode and condition the
	// run is a variant of and the values of the swept fields it carries.
	Sweep *SweepPoint `json:"sweep,omitempty"`
	// PredictedBreakerOpen is, per dependency whose breaker has a closed
	// form (spec.BreakerOpening), the predicted time from fault start until
	// it opens.
	PredictedBreakerOpen map[string]time.Duration `json:"predicted_breaker_open_ns,omitempty"`
	// RecoveryAllowance is how much longer than expectations.recovery_max_t
	// the run's own policies may take to come back after the fault: a
	// breaker's open delay.
	RecoveryAllowance time.Duration `json:"recovery_allowance_ns,omitempty"`
	// Proxies is, per dependency, the data-plane URL of its fault proxy as
	// the service calls it (on a cluster, the proxies' Service).
	Proxies map[string]string `json:"proxies,omitempty"`
	// CallClasses are, per dependency with classes, the classes of its
	// calls its proxy counted (ClassCallMetrics): the spec's declared
	// classes and its conditions' match expressions; statement classes of
	// a PostgreSQL dependency, route classes of an HTTP one. (The key is
	// the first kind's, kept for the runs recorded with it.)
	CallClasses map[string][]CallClass `json:"statement_classes,omitempty"`
	// Phases are the actual phase spans, in order.
	Phases []PhaseSpan `json:"phases"`
	// Faults are the actual fault switches as acknowledged by the proxy.
	Faults []FaultEvent `json:"faults,omitempty"`
	// Validity is the load generator's verdict per endpoint and phase.
	Validity []PhaseValidity `json:"validity"`
	// Valid is true when every entry of Validity is valid.
	Valid bool `json:"valid"`
	// Startup is the harness overhead of the run: from the start of the
	// components' launch to the first scheduled request.
	Startup time.Duration `json:"startup_ns,omitempty"`
	// Error is the harness error that ended the run, if any.
	Error string `json:"error,omitempty"`
	// Abort is set when a stop condition fired during the fault phase:
	// the faults were removed at once and the run's fault measures only
	// until then.
	Abort *Abort `json:"abort,omitempty"`
	// Shards are the load generator's shards, when several processes sent
	// the load (run --shards, run --kubernetes): their clocks, starts and
	// what went wrong.
	Shards []ShardStats `json:"shards,omitempty"`
	// Attempts are the earlier attempts of this run that were INVALID and
	// were run again, oldest first.
	Attempts []Attempt `json:"attempts,omitempty"`
	// MaxServiceMemory is the memory guard's ceiling on the service's
	// resident memory in this run (bytes; 0: no guard, the service is not
	// a process the runner started); MemoryStop is set when it stopped the
	// run (StatusStopped).
	MaxServiceMemory int64       `json:"max_service_memory_bytes,omitempty"`
	MemoryStop       *MemoryStop `json:"memory_stop,omitempty"`
	// Jobs, when the built-in service has a job queue, is where its jobs
	// run and the burst of them the condition enqueues (JobsInfo).
	Jobs *JobsInfo `json:"jobs,omitempty"`
}

// MemoryStop is the memory guard stopping a run: the resident memory of
// the service's processes (each process group the runner started for it)
// reached the ceiling, so the runner killed them at once and stopped the
// load. It is what the service did, not a flaw of the measurement: the
// run is not run again.
type MemoryStop struct {
	// At is when the guard saw the ceiling reached, in Phase.
	At    time.Time `json:"at"`
	Phase string    `json:"phase,omitempty"`
	// Component is the service's process that held the most memory, PID
	// its process id (its process group was killed).
	Component string `json:"component"`
	PID       int    `json:"pid"`
	// RSSBytes is the resident memory of the service's processes
	// together; LimitBytes the ceiling.
	RSSBytes   int64 `json:"rss_bytes"`
	LimitBytes int64 `json:"limit_bytes"`
}

// Attempt is an earlier, INVALID attempt of a run.
type Attempt struct {
	Started time.Time `json:"started"`
	// Folder is where its data were kept, under runs/ (e.g.
	// "slow-shared-r1.invalid-1").
	Folder string `json:"folder,omitempty"`
	// Broken are the validity rules it broke, each naming its endpoint
	// and phase.
	Broken []Broken `json:"broken"`
}

// EndpointInfo describes one loaded endpoint.
type EndpointInfo struct {
	Name       string  `json:"name"`       // "a", "b"
	Dependency string  `json:"dependency"` // "A", "B"
	Pool       string  `json:"pool"`       // the pool it draws from
	Rate       float64 `json:"rate"`       // target requests per second during the fault phase
	// BaseLatency is the dependency's normal latency.
	BaseLatency time.Duration `json:"base_latency_ns"`
	// RetryAttempts is the most attempts its clients make (the first
	// included); 0 when they do not retry.
	RetryAttempts int `json:"retry_attempts,omitempty"`
	// Tenant, when the built-in service has a tenant stage, is the label
	// of its requests' tenant in the stage's metrics (the tenant's name,
	// or "other" for one without a label of its own).
	Tenant string `json:"tenant,omitempty"`
	// Path, when it is not Name, is the built-in service's endpoint its
	// requests go to (GET /<Path>), shared with the other endpoints of that
	// path: the service's metrics are labelled by it.
	Path string `json:"path,omitempty"`
}

// CanaryInfo describes a run's canary: a request that does no work, sent
// beside the endpoints in every phase; its latency is the noise floor.
type CanaryInfo struct {
	URL  string  `json:"url"`
	Rate float64 `json:"rate"`
	// MaxP99 is the validity limit on its p99 in each judged phase.
	MaxP99 time.Duration `json:"max_p99_ns"`
}

// PoolInfo describes one pool and the Little's-law prediction for it.
type PoolInfo struct {
	Name  string `json:"name"` // "shared", "a", "b"
	Limit int    `json:"limit"`
	Queue int    `json:"queue"`
	// MaxWait is the longest a caller waits in the queue.
	MaxWait time.Duration `json:"max_wait_ns"`
	// Endpoints drawing from this pool.
	Endpoints []string `json:"endpoints"`
	// PredictedDemand is λ·W summed over the pool's endpoints for each phase
	// (phase name → permits), per Little's law, with W the expected holding time.
	PredictedDemand map[string]float64 `json:"predicted_demand,omitempty"`
	// PredictedExhaustion is the predicted time from fault start until the pool
	// is exhausted (0 when the pool is never predicted to be exhausted).
	PredictedExhaustion time.Duration `json:"predicted_exhaustion_ns,omitempty"`
}

// PhaseSpan is one phase as it actually ran.
type PhaseSpan struct {
	Name  string    `json:"name"` // "warmup", "baseline", "fault", "recovery"
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// Actions of a FaultEvent: the condition's faults set and cleared, and a
// probe's latency set and cleared (not the condition's: the analysis reads
// only FaultSet and FaultClear as the fault).
const (
	FaultSet        = "set"
	FaultClear      = "clear"
	FaultProbeSet   = "probe-set"
	FaultProbeClear = "probe-clear"
	// FaultAbort: a stop condition removed the faults (FaultEvent.Reason
	// says which).
	FaultAbort = "abort"
)

// FaultEvent is a fault switch on a proxy, with the time the proxy acknowledged it.
type FaultEvent struct {
	Time       time.Time `json:"time"`
	Dependency string    `json:"dependency"` // "A"
	Action     string    `json:"action"`     // FaultSet, FaultClear, FaultProbeSet, FaultProbeClear or FaultAbort
	// Faults is the fault list as sent to the proxy (its JSON form), empty on clear.
	Faults json.RawMessage `json:"faults,omitempty"`
	// Reason, for FaultAbort, is what triggered it.
	Reason string `json:"reason,omitempty"`
	// Replica names the proxy replica the event is of, when the
	// dependency's proxy has several (a Deployment's pods): each switch is
	// recorded per replica, at the time that replica acknowledged it.
	Replica string `json:"replica,omitempty"`
}

// PhaseValidity is the load generator's validity verdict for one endpoint and phase.
type PhaseValidity struct {
	Endpoint     string        `json:"endpoint"`
	Phase        string        `json:"phase"`
	Valid        bool          `json:"valid"`
	Broken       []Broken      `json:"broken,omitempty"`
	TargetRate   float64       `json:"target_rate"`
	AchievedRate float64       `json:"achieved_rate"`
	LagP99       time.Duration `json:"lag_p99_ns"`
	// HarnessErrors counts transport errors at the load generator.
	HarnessErrors int64 `json:"harness_errors"`
}

// SweepPoint is where a run sits in a sweep (spec.Sweep).
type SweepPoint struct {
	// Mode and Condition are the original names the run's mode and
	// condition are variants of (the run's own names carry the values).
	Mode      string       `json:"mode"`
	Condition string       `json:"condition"`
	Values    []SweepValue `json:"values"`
}

// SweepValue is one swept field's value in a run: as written, and as a
// number (a duration in seconds) when it is one, else NaN (null in JSON).
type SweepValue struct {
	Field  string  `json:"field"`
	Value  string  `json:"value"`
	Number float64 `json:"-"`
}

// MarshalJSON writes Number, null when NaN.
func (v SweepValue) MarshalJSON() ([]byte, error) {
	type plain struct {
		Field  string   `json:"field"`
		Value  string   `json:"value"`
		Number *float64 `json:"number"`
	}
	p := plain{Field: v.Field, Value: v.Value}
	if !math.IsNaN(v.Number) && !math.IsInf(v.Number, 0) {
		p.Number = &v.Number
	}
	return json.Marshal(p)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (v *SweepValue) UnmarshalJSON(b []byte) error {
	var p struct {
		Field  string   `json:"field"`
		Value  string   `json:"value"`
		Number *float64 `json:"number"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*v = SweepValue{Field: p.Field, Value: p.Value, Number: math.NaN()}
	if p.Number != nil {
		v.Number = *p.Number
	}
	return nil
}

// LongestWait is the longest any of the run's pools lets a caller wait in
// its queue.
func (m *RunMeta) LongestWait() time.Duration {
	var w time.Duration
	for _, p := range m.Pools {
		w = max(w, p.MaxWait)
	}
	return w
}
