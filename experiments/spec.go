package experiments

import (
	"gopkg.in/yaml.v3"

	"github.com/bulkheadlab/bulkheadlab/analysis"
)

// Spec is one experiment: the service, its dependencies, the load, the
// phases and the matrix of conditions × modes × repeats (DESIGN §1–§5).
// Load decodes it strictly; Resolve fills defaults and turns relative
// durations into absolute ones. A Spec is not safe for concurrent mutation;
// a resolved Spec may be read concurrently.
type Spec struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description,omitempty"`
	// Seed seeds every random source of the experiment; each run derives
	// its own seed from it (Run.Seed).
	Seed int64 `yaml:"seed"`
	// Repeats is how many times the matrix is run, interleaved (default 1).
	Repeats int `yaml:"repeats"`

	Service      Service      `yaml:"service"`
	Dependencies Dependencies `yaml:"dependencies"`
	Load         LoadSpec     `yaml:"load"`
	Phases       Phases       `yaml:"phases"`
	// Conditions default to healthy, slow, failing, busy.
	Conditions []Condition `yaml:"conditions"`
	// Modes default to shared, bulkhead.
	Modes        []Mode                `yaml:"modes"`
	Expectations analysis.Expectations `yaml:"expectations"`
	// External, when set, points the load at the user's own service.
	External *External `yaml:"external,omitempty"`

	file  string         // the file name used in error messages
	lines map[string]int // field path → line, from decoding
}

// Service is the service under test (DESIGN §1, §4).
type Service struct {
	// Timeout is T, the service→dependency timeout (absolute only).
	Timeout Duration `yaml:"timeout"`
	// PoolSize is P: the shared pool, or the total split P/2 + P/2.
	PoolSize int `yaml:"pool_size"`
	// Queue is the shared pool's queue; bulkhead queues are Queue/2 each
	// unless a mode sets them. Nil means 20.
	Queue *int `yaml:"queue"`
	// MaxWait is the longest a caller waits in a queue (default T).
	MaxWait Duration `yaml:"max_wait"`
	// Conns is the service's HTTP connection pool size per dependency.
	Conns int `yaml:"conns"`
}

// Dependencies are the two dependency stubs.
type Dependencies struct {
	A Dependency `yaml:"A"`
	B Dependency `yaml:"B"`
}

// Dependency is one stub's normal behaviour.
type Dependency struct {
	Latency Duration `yaml:"latency"`
	Jitter  Duration `yaml:"jitter"`
	// Size is the response body size in bytes (default 64).
	Size int `yaml:"size"`
}

// Rates are requests per second per endpoint; a zero field means "not
// overridden" in a condition.
type Rates struct {
	A float64 `yaml:"a,omitempty"`
	B float64 `yaml:"b,omitempty"`
}

// LoadSpec is the open-model load.
type LoadSpec struct {
	Rates Rates `yaml:"rates"`
	// ClientTimeout is the load generator's timeout (default 2·(T+max wait)).
	ClientTimeout Duration `yaml:"client_timeout"`
	// Window is the recording window (default 250ms).
	Window Duration `yaml:"window"`
}

// Phases are the four phase lengths of every run.
type Phases struct {
	Warmup   Duration `yaml:"warmup"`
	Baseline Duration `yaml:"baseline"`
	Fault    Duration `yaml:"fault"`
	Recovery Duration `yaml:"recovery"`
}

// Condition is one row of the matrix: what happens during the fault phase.
// In YAML it is either a built-in name ("slow") or a mapping; a mapping
// named like a built-in with no faults and no rates is that built-in.
type Condition struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description,omitempty"`
	// Dependency gets the faults: "A" (default) or "B".
	Dependency string  `yaml:"dependency,omitempty"`
	Faults     []Fault `yaml:"faults,omitempty"`
	// Rates override load.rates during the fault phase (zero = keep).
	Rates *Rates `yaml:"rates,omitempty"`
}

// Fault is one fault of the proxy. Its JSON form is the fault proxy's
// control API body element (faultproxy.Fault); durations must be resolved
// (Spec.Resolve) before marshalling to JSON.
type Fault struct {
	// Type is latency, error, abort or hang.
	Type string `yaml:"type" json:"type"`
	// Percent of requests affected, in (0, 100]; 0 in a spec means 100.
	Percent      float64  `yaml:"percent" json:"percent"`
	Latency      Duration `yaml:"latency,omitempty" json:"latency,omitzero"`
	Jitter       Duration `yaml:"jitter,omitempty" json:"jitter,omitzero"`
	Distribution string   `yaml:"distribution,omitempty" json:"distribution,omitempty"`
	// Max caps a heavy-tailed (pareto, lognormal) delay.
	Max     Duration          `yaml:"max,omitempty" json:"max,omitzero"`
	Status  int               `yaml:"status,omitempty" json:"status,omitempty"`
	Body    string            `yaml:"body,omitempty" json:"body,omitempty"`
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
}

// Mode is one column of the matrix. In YAML it is "shared", "bulkhead" or a
// mapping {name: bulkhead, pool_sizes: {a: 2, b: 8}, queues: {a: 2, b: 8}}.
type Mode struct {
	Name      string   `yaml:"name"`
	PoolSizes *PerPool `yaml:"pool_sizes,omitempty"`
	Queues    *PerPool `yaml:"queues,omitempty"`
}

// PerPool gives a number per bulkhead pool.
type PerPool struct {
	A int `yaml:"a"`
	B int `yaml:"b"`
}

// External runs the load against the user's own service (DESIGN §2): the
// runner starts only the fault proxies, which the user's service must call.
type External struct {
	// Targets are the full URLs of the user's /a and /b.
	Targets URLs `yaml:"targets"`
	// Upstreams are the real dependencies the proxies forward to.
	Upstreams DepURLs `yaml:"upstreams"`
	// Proxies are the fixed loopback listen addresses (host:port) of the
	// proxies, as configured in the user's service.
	Proxies DepURLs `yaml:"proxies"`
	// Rules classify responses (status/header → result class); kept opaque
	// here and decoded by the load generator.
	Rules *yaml.Node `yaml:"rules,omitempty"`
}

// URLs per endpoint.
type URLs struct {
	A string `yaml:"a"`
	B string `yaml:"b"`
}

// DepURLs per dependency.
type DepURLs struct {
	A string `yaml:"A"`
	B string `yaml:"B"`
}

// Built-in condition and mode names.
const (
	CondHealthy  = "healthy"
	CondSlow     = "slow"
	CondFailing  = "failing"
	CondBusy     = "busy"
	ModeShared   = "shared"
	ModeBulkhead = "bulkhead"
)

// setScalar lets a condition be written as its name.
func (c *Condition) setScalar(s string) error { c.Name = s; return nil }

// setScalar lets a mode be written as its name.
func (m *Mode) setScalar(s string) error { m.Name = s; return nil }

// File returns the file name the spec was loaded from.
func (s *Spec) File() string { return s.file }
