package service

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ErrInvalidConfig is wrapped by every *ConfigError.
var ErrInvalidConfig = errors.New("invalid config")

// ConfigError names the configuration field that is invalid. Field uses the
// spec's snake_case names (pool_size, pool_sizes.a, queue, max_wait,
// pool_groups.core[1], timeout, conns, dep_a, ...); the CLI maps them to its
// flag names.
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
	// ModeBulkhead: one pool per endpoint, named after it ("a" and "b"),
	// except that the endpoints of a pool group (LayoutConfig.Groups) share
	// one pool named after the group.
	ModeBulkhead Mode = "bulkhead"
	// ModeUnbounded: no pool at all, nothing bounds the calls in flight:
	// every request is a goroutine that awaits its dependency, as on an
	// event-loop runtime where awaits are cheap. Each call holds its
	// request's state (Config.RequestStateBytes) until it returns, so
	// memory grows with arrival rate × dependency latency. PoolSize,
	// Queue and MaxWait are not used.
	ModeUnbounded Mode = "unbounded"
	// ModeRateLimit: no pool; each dependency has a smooth rate limiter of
	// its own (failsafe-go's ratelimiter: one call every 1/rate seconds)
	// instead of a bulkhead. A call over the rate waits up to MaxWait for
	// its turn and is refused at once when it would wait longer. It bounds
	// calls per second, not calls in flight: a dependency that becomes
	// slower at the same rate has more calls in flight, and nothing stops
	// them.
	ModeRateLimit Mode = "ratelimit"
)

// The endpoint names of the default two-endpoint service; in bulkhead mode
// they are also the pool names.
const (
	EndpointA = "a"
	EndpointB = "b"
)

// SharedPool is the name of the one pool of shared mode.
const SharedPool = "shared"

// Modes lists the layouts.
var Modes = []Mode{ModeShared, ModeBulkhead, ModeUnbounded, ModeRateLimit}

// ParseMode parses a layout's name (Modes).
func ParseMode(s string) (Mode, error) {
	if m := Mode(s); slices.Contains(Modes, m) {
		return m, nil
	}
	names := make([]string, len(Modes))
	for i, m := range Modes {
		names[i] = strconv.Quote(string(m))
	}
	return "", fieldErrorf("mode", "must be one of %s, got %q", strings.Join(names, ", "), s)
}

// pooled reports whether the layout has pools: unbounded and ratelimit have
// none.
func (m Mode) pooled() bool { return m == ModeShared || m == ModeBulkhead }

// LayoutConfig describes the service's pools. The zero value is invalid.
//
// In bulkhead mode the pools are the pool groups (Groups), each named after
// its group, and one pool per endpoint in no group, named after the
// endpoint; the pool sizes and queues below are per pool, keyed by those
// names.
type LayoutConfig struct {
	Mode Mode
	// PoolSize is P: the shared pool's size, or the total that bulkhead mode
	// splits evenly among the pools (the first pools get the remainder, one
	// each). Bulkhead mode needs P ≥ the number of pools unless PoolSizes
	// sets every pool.
	PoolSize int
	// PoolSizes sets per-pool sizes in bulkhead mode (keyed by pool name: a
	// group's name or an ungrouped endpoint's; every pool is required when
	// the map is not empty). Invalid in shared mode.
	PoolSizes map[string]int
	// Queue is Q: the shared pool's queue, or the total that bulkhead mode
	// splits like PoolSize. Zero means no queue.
	Queue int
	// Queues sets per-pool queues in bulkhead mode, like PoolSizes.
	Queues map[string]int
	// MaxWait bounds each caller's time in a queue; required when any queue
	// is not empty.
	MaxWait time.Duration
	// Groups, in bulkhead mode only, maps a pool name to the endpoints that
	// share that pool (e.g. core: checkout, cart): a slow dependency of one
	// of them can take the others down, and no endpoint outside the group.
	// Every endpoint in no group keeps a pool of its own. A group's name
	// follows the rules of an endpoint's (ValidateEndpointName) and must not
	// be the name of an endpoint outside the group (pool names are unique);
	// a group has at least one endpoint, and an endpoint is in at most one
	// group. Errors name pool_groups.<name> or pool_groups.<name>[i].
	Groups map[string][]string

	// Rate, in ratelimit mode, is each dependency's rate limit in calls per
	// second; Rates sets it per endpoint (keyed by endpoint name; an
	// endpoint not listed has Rate, which must then be set). MaxWait is how
	// long a call may wait for its turn (zero: refused at once).
	Rate  float64
	Rates map[string]float64

	// BrokenSharedBulkhead is a deliberate TEST FAULT, never for real use:
	// in bulkhead mode it still creates the layout's pools (so the service
	// looks like a bulkhead from outside) but routes every endpoint to the
	// first pool, sized as all pools together. The isolation is gone, and an experiment asserting P2
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
// layout rules (the shared pool, the pool groups, the bulkhead split), used
// by the service and by previews of it. The pools come in the order of
// their first endpoint, each with its endpoints in order. Errors are
// *ConfigError. With BrokenSharedBulkhead the specs are those the service
// exports (the layout's pools), not the one semaphore it really uses.
func (cfg LayoutConfig) Pools(endpoints []string) ([]PoolSpec, error) {
	if _, err := ParseMode(string(cfg.Mode)); err != nil {
		return nil, err
	}
	if len(endpoints) == 0 {
		return nil, fieldErrorf("endpoints", "at least one endpoint is required")
	}
	if cfg.Mode != ModeRateLimit && (cfg.Rate != 0 || len(cfg.Rates) > 0) {
		return nil, fieldErrorf(map[bool]string{true: "rate", false: "rates"}[cfg.Rate != 0], "only applies to ratelimit mode")
	}
	if !cfg.Mode.pooled() {
		return nil, cfg.validateUnpooled(endpoints)
	}
	if cfg.Mode == ModeShared {
		if len(cfg.PoolSizes) > 0 {
			return nil, fieldErrorf("pool_sizes", "only applies to bulkhead mode")
		}
		if len(cfg.Queues) > 0 {
			return nil, fieldErrorf("queues", "only applies to bulkhead mode")
		}
		if len(cfg.Groups) > 0 {
			return nil, fieldErrorf("pool_groups", "only applies to bulkhead mode (in shared mode every endpoint shares one pool already)")
		}
		pc := PoolConfig{Size: cfg.PoolSize, Queue: cfg.Queue, MaxWait: cfg.MaxWait}
		if err := pc.Validate(); err != nil {
			return nil, prefixField(err, layoutField(""))
		}
		return []PoolSpec{{Name: SharedPool, Config: pc, Endpoints: append([]string(nil), endpoints...)}}, nil
	}
	out, err := cfg.bulkheads(endpoints)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(out))
	for i, ps := range out {
		names[i] = ps.Name
	}
	sizes, err := split(cfg.PoolSize, cfg.PoolSizes, names, "pool_size", "pool_sizes", len(names))
	if err != nil {
		return nil, err
	}
	queues, err := split(cfg.Queue, cfg.Queues, names, "queue", "queues", 0)
	if err != nil {
		return nil, err
	}
	for i := range out {
		pc := PoolConfig{Size: sizes[i], Queue: queues[i], MaxWait: cfg.MaxWait}
		if err := pc.Validate(); err != nil {
			return nil, prefixField(err, layoutField(out[i].Name))
		}
		out[i].Config = pc
	}
	return out, nil
}

// validateUnpooled validates a layout without pools: the pool settings
// that are maps must be empty.
func (cfg LayoutConfig) validateUnpooled(endpoints []string) error {
	for _, f := range []struct {
		name string
		n    int
	}{{"pool_sizes", len(cfg.PoolSizes)}, {"queues", len(cfg.Queues)}, {"pool_groups", len(cfg.Groups)}} {
		if f.n > 0 {
			return fieldErrorf(f.name, "only applies to bulkhead mode (%s has no pools)", cfg.Mode)
		}
	}
	if cfg.MaxWait < 0 {
		return fieldErrorf("max_wait", "must not be negative, got %v", cfg.MaxWait)
	}
	if cfg.Mode == ModeRateLimit {
		_, err := cfg.rates(endpoints)
		return err
	}
	return nil
}

// Rate limits are between one call in 1000 s and a million a second (an
// interval of at least 1 µs).
const (
	MinRate = 0.001
	MaxRate = 1e6
)

// rates returns each endpoint's rate limit in ratelimit mode.
func (cfg LayoutConfig) rates(endpoints []string) (map[string]float64, error) {
	valid := func(field string, r float64) error {
		if !(r >= MinRate && r <= MaxRate) {
			return fieldErrorf(field, "must be between %g and %g calls per second, got %g", MinRate, MaxRate, r)
		}
		return nil
	}
	for _, e := range sortedKeys(cfg.Rates) {
		if !slices.Contains(endpoints, e) {
			return nil, fieldErrorf("rates", "no endpoint %q (endpoints: %s)", e, strings.Join(endpoints, ", "))
		}
		if err := valid("rates."+e, cfg.Rates[e]); err != nil {
			return nil, err
		}
	}
	out := map[string]float64{}
	for _, e := range endpoints {
		r, ok := cfg.Rates[e]
		if !ok {
			if err := valid("rate", cfg.Rate); err != nil {
				return nil, err
			}
			r = cfg.Rate
		}
		out[e] = r
	}
	return out, nil
}

// bulkheads validates cfg.Groups against the endpoints and returns the
// bulkhead pools, unsized: a pool per group and one per endpoint in no
// group, in the order of their first endpoint.
func (cfg LayoutConfig) bulkheads(endpoints []string) ([]PoolSpec, error) {
	known := map[string]bool{}
	for _, e := range endpoints {
		known[e] = true
	}
	groupOf := map[string]string{}
	groups := make([]string, 0, len(cfg.Groups))
	for g := range cfg.Groups {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, g := range groups {
		field := "pool_groups." + g
		members := cfg.Groups[g]
		if err := validateName("pool group", g); err != nil {
			return nil, fieldErrorf(field, "%v", err)
		}
		if len(members) == 0 {
			return nil, fieldErrorf(field, "at least one endpoint is required (endpoints: %s)", strings.Join(endpoints, ", "))
		}
		if known[g] && !slices.Contains(members, g) {
			return nil, fieldErrorf(field, "pool name %q is also the name of endpoint %q, which is not in the group: pool names must be unique (rename the group, or list %s in it)", g, g, g)
		}
		for i, e := range members {
			field := fmt.Sprintf("%s[%d]", field, i)
			switch other, dup := groupOf[e]; {
			case !known[e]:
				return nil, fieldErrorf(field, "no endpoint %q (endpoints: %s)", e, strings.Join(endpoints, ", "))
			case dup && other == g:
				return nil, fieldErrorf(field, "endpoint %q is listed twice", e)
			case dup:
				return nil, fieldErrorf(field, "endpoint %q is in pool group %q already: an endpoint draws from one pool", e, other)
			}
			groupOf[e] = g
		}
	}
	var out []PoolSpec
	index := map[string]int{}
	for _, e := range endpoints {
		name := e
		if g, ok := groupOf[e]; ok {
			name = g
		}
		i, ok := index[name]
		if !ok {
			i = len(out)
			index[name] = i
			out = append(out, PoolSpec{Name: name})
		}
		out[i].Endpoints = append(out[i].Endpoints, e)
	}
	return out, nil
}

// groupOf returns the pool group that lists endpoint e ("": none).
func (cfg LayoutConfig) groupOf(e string) string {
	for g, members := range cfg.Groups {
		if slices.Contains(members, e) {
			return g
		}
	}
	return ""
}

// Layout is the set of pools built from a LayoutConfig and the pool each
// endpoint draws from. It is immutable and safe for concurrent use.
type Layout struct {
	mode       Mode
	pools      []*Pool
	byEndpoint map[string]*Pool
	limiters   map[string]*rateLimit // ratelimit mode
}

// NewLayout validates cfg and builds its pools for the given endpoints
// (see LayoutConfig.Pools). Errors are *ConfigError.
func NewLayout(cfg LayoutConfig, endpoints []string) (*Layout, error) {
	specs, err := cfg.Pools(endpoints)
	if err != nil {
		return nil, err
	}
	l := &Layout{mode: cfg.Mode, byEndpoint: map[string]*Pool{}}
	if cfg.Mode == ModeRateLimit {
		rates, _ := cfg.rates(endpoints) // Pools validated them
		l.limiters = map[string]*rateLimit{}
		for _, e := range endpoints {
			l.limiters[e] = newRateLimit(rates[e], cfg.MaxWait)
		}
	}
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

// split returns the per-pool values: explicit ones from m, or total split
// evenly with the first pools taking the remainder, one unit each (two
// pools: a gets the odd unit). minTotal is the smallest total that gives
// each pool a usable value.
func split(total int, m map[string]int, pools []string, totalField, mapField string, minTotal int) ([]int, error) {
	n := len(pools)
	if len(m) == 0 {
		switch {
		case total < 0:
			return nil, fieldErrorf(totalField, "must not be negative, got %d", total)
		case total < minTotal:
			return nil, fieldErrorf(totalField, "must be at least %d in bulkhead mode (one per pool), got %d", minTotal, total)
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
	for _, e := range pools {
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
		return nil, fieldErrorf(mapField, "unknown pool(s) %s; the pools are %s", strings.Join(unknown, ","), strings.Join(pools, ", "))
	}
	out := make([]int, n)
	for i, e := range pools {
		v, ok := m[e]
		if !ok {
			return nil, fieldErrorf(mapField+"."+e, "missing; set every pool (%s)", strings.Join(pools, ", "))
		}
		out[i] = v
	}
	return out, nil
}

// Mode returns the layout's mode.
func (l *Layout) Mode() Mode { return l.mode }

// Pools returns the layout's pools ("shared", or the bulkheads in the order
// of their first endpoint).
func (l *Layout) Pools() []*Pool { return append([]*Pool(nil), l.pools...) }

// Pool returns the pool the endpoint draws from, nil for an unknown
// endpoint or a layout without pools.
func (l *Layout) Pool(endpoint string) *Pool { return l.byEndpoint[endpoint] }
