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

// Endpoint names; in bulkhead mode they are also the pool names.
const (
	EndpointA = "a"
	EndpointB = "b"
)

// Endpoints lists the service's endpoints in order.
var Endpoints = []string{EndpointA, EndpointB}

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
	// splits in two (a gets the odd permit). Bulkhead mode needs P >= 2
	// unless PoolSizes sets both pools.
	PoolSize int
	// PoolSizes sets per-dependency sizes in bulkhead mode (keys "a" and
	// "b", both required when the map is not empty). Invalid in shared mode.
	PoolSizes map[string]int
	// Queue is Q: the shared pool's queue, or the total that bulkhead mode
	// splits in two (a gets the odd slot). Zero means no queue.
	Queue int
	// Queues sets per-dependency queues in bulkhead mode, like PoolSizes.
	Queues map[string]int
	// MaxWait bounds each caller's time in a queue; required when any queue
	// is not empty.
	MaxWait time.Duration

	// BrokenSharedBulkhead is a deliberate TEST FAULT, never for real use:
	// in bulkhead mode it still creates pools "a" and "b" (so the service
	// looks like a bulkhead from outside) but routes both endpoints to pool
	// "a", sized a+b. The isolation is gone, and an experiment asserting P2
	// must fail against it. It has no effect in shared mode.
	BrokenSharedBulkhead bool
}

// Layout is the set of pools built from a LayoutConfig and the pool each
// endpoint draws from. It is immutable and safe for concurrent use.
type Layout struct {
	mode       Mode
	pools      []*Pool
	byEndpoint map[string]*Pool
}

// NewLayout validates cfg and builds its pools. Errors are *ConfigError.
func NewLayout(cfg LayoutConfig) (*Layout, error) {
	if _, err := ParseMode(string(cfg.Mode)); err != nil {
		return nil, err
	}
	if cfg.Mode == ModeShared {
		return newSharedLayout(cfg)
	}
	return newBulkheadLayout(cfg)
}

func newSharedLayout(cfg LayoutConfig) (*Layout, error) {
	if len(cfg.PoolSizes) > 0 {
		return nil, fieldErrorf("pool_sizes", "only applies to bulkhead mode")
	}
	if len(cfg.Queues) > 0 {
		return nil, fieldErrorf("queues", "only applies to bulkhead mode")
	}
	p, err := NewPool("shared", PoolConfig{Size: cfg.PoolSize, Queue: cfg.Queue, MaxWait: cfg.MaxWait})
	if err != nil {
		return nil, prefixField(err, layoutField(""))
	}
	return &Layout{mode: ModeShared, pools: []*Pool{p},
		byEndpoint: map[string]*Pool{EndpointA: p, EndpointB: p}}, nil
}

func newBulkheadLayout(cfg LayoutConfig) (*Layout, error) {
	sizes, err := split(cfg.PoolSize, cfg.PoolSizes, "pool_size", "pool_sizes", 2)
	if err != nil {
		return nil, err
	}
	queues, err := split(cfg.Queue, cfg.Queues, "queue", "queues", 0)
	if err != nil {
		return nil, err
	}
	l := &Layout{mode: ModeBulkhead, byEndpoint: map[string]*Pool{}}
	for i, name := range Endpoints {
		pc := PoolConfig{Size: sizes[i], Queue: queues[i], MaxWait: cfg.MaxWait}
		p, err := NewPool(name, pc)
		if err != nil {
			return nil, prefixField(err, layoutField(name))
		}
		l.pools = append(l.pools, p)
		l.byEndpoint[name] = p
	}
	if cfg.BrokenSharedBulkhead {
		// TEST FAULT: both endpoints share one semaphore of a+b permits.
		pc := PoolConfig{Size: sizes[0] + sizes[1], Queue: queues[0] + queues[1], MaxWait: cfg.MaxWait}
		p, err := NewPool(EndpointA, pc)
		if err != nil {
			return nil, prefixField(err, layoutField(EndpointA))
		}
		l.pools[0] = p
		l.byEndpoint[EndpointA], l.byEndpoint[EndpointB] = p, p
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

// split returns the per-endpoint values (a, b): explicit ones from m, or
// total split in two with a taking the odd unit. minTotal is the smallest
// total that gives each endpoint a usable value.
func split(total int, m map[string]int, totalField, mapField string, minTotal int) ([]int, error) {
	if len(m) == 0 {
		switch {
		case total < 0:
			return nil, fieldErrorf(totalField, "must not be negative, got %d", total)
		case total < minTotal:
			return nil, fieldErrorf(totalField, "must be at least %d in bulkhead mode, got %d", minTotal, total)
		}
		return []int{total - total/2, total / 2}, nil
	}
	var keys []string
	for k := range m {
		if k != EndpointA && k != EndpointB {
			keys = append(keys, k)
		}
	}
	if len(keys) > 0 {
		sort.Strings(keys)
		return nil, fieldErrorf(mapField, "unknown pool(s) %s; the pools are a and b", strings.Join(keys, ","))
	}
	out := make([]int, len(Endpoints))
	for i, e := range Endpoints {
		v, ok := m[e]
		if !ok {
			return nil, fieldErrorf(mapField+"."+e, "missing; set both a and b")
		}
		out[i] = v
	}
	return out, nil
}

// Mode returns the layout's mode.
func (l *Layout) Mode() Mode { return l.mode }

// Pools returns the layout's pools ("shared", or "a" then "b").
func (l *Layout) Pools() []*Pool { return append([]*Pool(nil), l.pools...) }

// Pool returns the pool endpoint ("a" or "b") draws from, nil for an
// unknown endpoint.
func (l *Layout) Pool(endpoint string) *Pool { return l.byEndpoint[endpoint] }
