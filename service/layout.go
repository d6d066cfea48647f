package service

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// ErrInvalidConfig is wrapped by every *ConfigError.
var ErrInvalidConfig = errors.New("invalid config")

// ConfigError names the configuration field that is invalid. Field uses the
// spec's snake_case names (pool_size, pool_sizes.a, queue, max_wait,
// timeout, conns, dep_a, ...); the CLI maps them to its flag names.
type ConfigError struct {
	Field string
	Msg   string
}

func (e *ConfigError) Error() string { return e.Field + ": " + e.Msg }

// Unwrap returns ErrInvalidConfig.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

func fieldErrorf(field, format string, args ...any) error {
	return &ConfigError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// prefixField re-homes a PoolConfig error under a layout field name.
func prefixField(err error, field func(string) string) error {
	var ce *ConfigError
	if errors.As(err, &ce) {
		return &ConfigError{Field: field(ce.Field), Msg: ce.Msg}
	}
	return err
}

// Mode is a pool layout.
type Mode string

const (
	// ModeShared: one pool named "shared" of PoolSize permits used by both
	// endpoints.
	ModeShared Mode = "shared"
	// ModeBulkhead: one pool per dependency, named "a" and "b".
	ModeBulkhead Mode = "bulkhead"
)

// The endpoint names of the default two-endpoint service; in bulkhead mode
// they are also the pool names.
const (
	EndpointA = "a"
	EndpointB = "b"
)

// SharedPool is the name of the one pool of shared mode.
const SharedPool = "shared"

// ParseMode parses "shared" or "bulkhead".
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeShared, ModeBulkhead:
		return m, nil
	}
	return "", fieldErrorf("mode", "must be %q or %q, got %q", ModeShared, ModeBulkhead, s)
}

// LayoutConfig describes the service's pools. The zero value is invalid.
type LayoutConfig struct {
	Mode Mode
	// PoolSize is P: the shared pool's size, or the total that bulkhead mode
	// splits evenly among the endpoints (the first endpoints get the
	// remainder, one each). Bulkhead mode needs P ≥ the number of endpoints
	// unless PoolSizes sets every pool.
	PoolSize int
	// PoolSizes sets per-endpoint sizes in bulkhead mode (keyed by endpoint
	// name; every endpoint is required when the map is not empty). Invalid
	// in shared mode.
	PoolSizes map[string]int
	// Queue is Q: the shared pool's queue, or the total that bulkhead mode
	// splits like PoolSize. Zero means no queue.
	Queue int
	// Queues sets per-dependency queues in bulkhead mode, like PoolSizes.
	Queues map[string]int
	// MaxWait bounds each caller's time in a queue; required when any queue
	// is not empty.
	MaxWait time.Duration

	// BrokenSharedBulkhead is a deliberate TEST FAULT, never for real use:
	// in bulkhead mode it still creates one pool per endpoint (so the service
	// looks like a bulkhead from outside) but routes every endpoint to the
	// first endpoint's pool, sized as all pools together. The isolation is gone, and an experiment asserting P2
	// must fail against it. It has no effect in shared mode.
	BrokenSharedBulkhead bool
}

// PoolSpec is one pool of a layout as it will be built: its name, size,
// queue and the endpoints that draw from it.
type PoolSpec struct {
	Name      string
	Config    PoolConfig
	Endpoints []string
}

// Pools validates cfg for the given endpoints (in order) and returns the
// pools NewLayout would build, without building them: the one home of the
// layout rules (the shared pool, the bulkhead split), used by the service
// and by previews of it. Errors are *ConfigError. With BrokenSharedBulkhead
// the specs are those the service exports (one per endpoint), not the one
// semaphore it really uses.
func (cfg LayoutConfig) Pools(endpoints []string) ([]PoolSpec, error) {
	if _, err := ParseMode(string(cfg.Mode)); err != nil {
		return nil, err
	}
	if len(endpoints) == 0 {
		return nil, fieldErrorf("endpoints", "at least one endpoint is required")
	}
	if cfg.Mode == ModeShared {
		if len(cfg.PoolSizes) > 0 {
			return nil, fieldErrorf("pool_sizes", "only applies to bulkhead mode")
		}
		if len(cfg.Queues) > 0 {
			return nil, fieldErrorf("queues", "only applies to bulkhead mode")
		}
		pc := PoolConfig{Size: cfg.PoolSize, Queue: cfg.Queue, MaxWait: cfg.MaxWait}
		if err := pc.Validate(); err != nil {
			return nil, prefixField(err, layoutField(""))
		}
		return []PoolSpec{{Name: SharedPool, Config: pc, Endpoints: append([]string(nil), endpoints...)}}, nil
	}
	sizes, err := split(cfg.PoolSize, cfg.PoolSizes, endpoints, "pool_size", "pool_sizes", len(endpoints))
	if err != nil {
		return nil, err
	}
	queues, err := split(cfg.Queue, cfg.Queues, endpoints, "queue", "queues", 0)
	if err != nil {
		return nil, err
	}
	out := make([]PoolSpec, len(endpoints))
	for i, name := range endpoints {
		pc := PoolConfig{Size: sizes[i], Queue: queues[i], MaxWait: cfg.MaxWait}
		if err := pc.Validate(); err != nil {
			return nil, prefixField(err, layoutField(name))
		}
		out[i] = PoolSpec{Name: name, Config: pc, Endpoints: []string{name}}
	}
	return out, nil
}

// Layout is the set of pools built from a LayoutConfig and the pool each
// endpoint draws from. It is immutable and safe for concurrent use.
type Layout struct {
	mode       Mode
	pools      []*Pool
	byEndpoint map[string]*Pool
}

// NewLayout validates cfg and builds its pools for the given endpoints
// (see LayoutConfig.Pools). Errors are *ConfigError.
func NewLayout(cfg LayoutConfig, endpoints []string) (*Layout, error) {
	specs, err := cfg.Pools(endpoints)
	if err != nil {
		return nil, err
	}
	l := &Layout{mode: cfg.Mode, byEndpoint: map[string]*Pool{}}
	for _, ps := range specs {
		p, err := NewPool(ps.Name, ps.Config)
		if err != nil {
			return nil, prefixField(err, layoutField(ps.Name))
		}
		l.pools = append(l.pools, p)
		for _, e := range ps.Endpoints {
			l.byEndpoint[e] = p
		}
	}
	if cfg.BrokenSharedBulkhead && cfg.Mode == ModeBulkhead {
		// TEST FAULT: every endpoint shares one semaphore of all the permits.
		var pc PoolConfig
		for _, ps := range specs {
			pc.Size += ps.Config.Size
			pc.Queue += ps.Config.Queue
		}
		pc.MaxWait = cfg.MaxWait
		p, err := NewPool(specs[0].Name, pc)
		if err != nil {
			return nil, prefixField(err, layoutField(specs[0].Name))
		}
		l.pools[0] = p
		for _, e := range endpoints {
			l.byEndpoint[e] = p
		}
	}
	return l, nil
}

// layoutField maps a PoolConfig field to the layout's field name.
func layoutField(pool string) func(string) string {
	return func(f string) string {
		switch {
		case f == "max_wait" || f == "name":
			return f
		case pool == "" && f == "size":
			return "pool_size"
		case pool == "":
			return f
		case f == "size":
			return "pool_sizes." + pool
		default:
			return "queues." + pool
		}
	}
}

// split returns the per-endpoint values: explicit ones from m, or total
// split evenly with the first endpoints taking the remainder, one unit each
// (two endpoints: a gets the odd unit). minTotal is the smallest total that
// gives each endpoint a usable value.
func split(total int, m map[string]int, endpoints []string, totalField, mapField string, minTotal int) ([]int, error) {
	n := len(endpoints)
	if len(m) == 0 {
		switch {
		case total < 0:
			return nil, fieldErrorf(totalField, "must not be negative, got %d", total)
		case total < minTotal:
			return nil, fieldErrorf(totalField, "must be at least %d in bulkhead mode (one per endpoint), got %d", minTotal, total)
		}
		out := make([]int, n)
		for i := range out {
			out[i] = total / n
			if i < total%n {
				out[i]++
			}
		}
		return out, nil
	}
	known := map[string]bool{}
	for _, e := range endpoints {
		known[e] = true
	}
	var unknown []string
	for k := range m {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fieldErrorf(mapField, "unknown pool(s) %s; the pools are %s", strings.Join(unknown, ","), strings.Join(endpoints, ", "))
	}
	out := make([]int, n)
	for i, e := range endpoints {
		v, ok := m[e]
		if !ok {
			return nil, fieldErrorf(mapField+"."+e, "missing; set every pool (%s)", strings.Join(endpoints, ", "))
		}
		out[i] = v
	}
	return out, nil
}

// Mode returns the layout's mode.
func (l *Layout) Mode() Mode { return l.mode }

// Pools returns the layout's pools ("shared", or one per endpoint in order).
func (l *Layout) Pools() []*Pool { return append([]*Pool(nil), l.pools...) }

// Pool returns the pool the endpoint draws from, nil for an unknown endpoint.
func (l *Layout) Pool(endpoint string) *Pool { return l.byEndpoint[endpoint] }
