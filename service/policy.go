package service

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A policy stack wraps one endpoint's dependency call in resilience
// policies, composed outer → inner. Every stack has a bulkhead stage (the
// endpoint's pool of the layout: the shared pool or its own) and a timeout
// stage (T unless the stack sets its own); retry, breaker and limiter are
// optional. An endpoint without a PolicyConfig is served exactly as before
// policies existed: pool, then the call under T.

// Stage names, in DefaultOrder: seed-002's wrap(retry, circuitBreaker,
// bulkhead, timeout), with the adaptive limiter just outside the bulkhead
// (it bounds how many calls may compete for the pool).
const (
	StageRetry    = "retry"
	StageBreaker  = "breaker"
	StageLimiter  = "limiter"
	StageBulkhead = "bulkhead"
	StageTimeout  = "timeout"
)

// DefaultOrder is the order of the stages of a stack that sets none, outer
// first; stages the stack does not configure are left out.
var DefaultOrder = []string{StageRetry, StageBreaker, StageLimiter, StageBulkhead, StageTimeout}

// Outcomes a retry or a breaker can treat as a failure (the values of their
// On lists). The default of both is error and timeout: a dependency that
// failed, not the service's own refusals.
const (
	OutcomeError       = "error"        // the dependency answered non-2xx or the connection failed
	OutcomeTimeout     = "timeout"      // the call ran out of time
	OutcomeRejected    = "rejected"     // a bulkhead refused (full, wait timeout)
	OutcomeCircuitOpen = "circuit_open" // a breaker refused
	OutcomeLimited     = "limited"      // an adaptive limiter refused
)

// Outcomes lists the failure outcomes a policy can be told to handle.
var Outcomes = []string{OutcomeError, OutcomeTimeout, OutcomeRejected, OutcomeCircuitOpen, OutcomeLimited}

// Bulkhead implementations of a stack.
const (
	BulkheadPool     = "pool"     // the project's own Pool (default)
	BulkheadFailsafe = "failsafe" // failsafe-go's bulkhead, for comparison
)

// PolicyConfig is the policy stack of one endpoint. The zero value is a
// stack of the layout's pool and T: the same behaviour as no stack, but
// with the policy metrics and headers. It is a value; the service copies it.
type PolicyConfig struct {
	// Order lists the configured stages outer → inner; nil means
	// DefaultOrder. It must name every configured stage once, bulkhead
	// and timeout included.
	Order []string
	// Timeout bounds each attempt of the call; zero means the service's T.
	// It may not exceed T.
	Timeout time.Duration
	// Bulkhead is BulkheadPool (or "") or BulkheadFailsafe: failsafe-go's
	// bulkhead sized like the endpoint's pool, waiting at most the layout's
	// MaxWait with no bound on how many wait. Failsafe needs bulkhead mode
	// (one pool per endpoint).
	Bulkhead string
	Retry    *RetryConfig
	Breaker  *BreakerConfig
	Limiter  *LimiterConfig
	// RetryAfter, when positive, is sent as Retry-After (in whole seconds,
	// rounded up) with every 503 of the endpoint.
	RetryAfter time.Duration
	// Limit, when positive, is a fixed bulkhead of the endpoint nested in
	// the layout's pool: at most Limit of its calls hold a permit of that
	// pool at once, and a call beyond it is rejected at once (the pool
	// LimitPoolName(endpoint), with no queue, exported like every pool).
	// A worker pool shared by every endpoint with a bulkhead per dependency
	// inside it is `shared` layout with a Limit on each.
	Limit int
}

// RetryConfig is a retry policy (failsafe-go's retrypolicy).
type RetryConfig struct {
	// Attempts is the most attempts, the first included (≥ 2).
	Attempts int
	// Backoff is the delay before the first retry, doubling up to
	// MaxBackoff (0: Backoff). Zero retries at once.
	Backoff, MaxBackoff time.Duration
	// Jitter varies each delay by up to ±Jitter of it (0–1), drawn from a
	// generator seeded with Seed.
	Jitter float64
	Seed   uint64
	// On lists the failure outcomes that are retried (nil: error, timeout).
	On []string
	// Budget, if set, caps the share of in-flight executions that are
	// retries (failsafe-go's budget); a refused retry answers with the last
	// attempt's failure.
	Budget *BudgetConfig
}

// BudgetConfig is a retry budget.
type BudgetConfig struct {
	// MaxRate is the largest share (0–1] of in-flight executions that may
	// be retries ...
	MaxRate float64
	// ... once at least MinConcurrency retries are in flight.
	MinConcurrency int
}

// Breaker kinds.
const (
	BreakerCount = "count" // Failures of the last Of executions (Of 0: consecutive)
	BreakerTime  = "time"  // Failures within Period
)

// BreakerConfig is a circuit breaker (failsafe-go's circuitbreaker).
type BreakerConfig struct {
	// Kind is BreakerCount (default) or BreakerTime.
	Kind string
	// Failures opens the breaker: that many failures among the last Of
	// executions (count; Of 0 means consecutive failures) or within Period
	// (time).
	Failures int
	Of       int
	Period   time.Duration
	// Delay is how long the breaker stays open before it lets trials in.
	Delay time.Duration
	// HalfOpenTrials is how many consecutive successful trials close it
	// again (0: Failures decides, as failsafe-go does).
	HalfOpenTrials int
	// On lists the outcomes that count as failures (nil: error, timeout).
	On []string
}

// LimiterConfig is an adaptive concurrency limiter (failsafe-go's
// adaptivelimiter): its limit moves between Min and Max with the trend of
// recent latencies against their baseline.
type LimiterConfig struct {
	Min, Max, Initial int
	// Window is the shortest time over which recent latencies are
	// collected (with at least MinSamples of them) before the limit moves;
	// zero means 1s and 50.
	Window     time.Duration
	MinSamples int
	// MaxLimitFactor caps the limit at this many times the calls in flight
	// (≥ 1; zero means failsafe-go's 5).
	MaxLimitFactor float64
}

// order returns the stack's stages outer → inner.
func (pc PolicyConfig) order() []string {
	if pc.Order != nil {
		return pc.Order
	}
	var out []string
	for _, s := range DefaultOrder {
		if pc.has(s) {
			out = append(out, s)
		}
	}
	return out
}

// has reports whether stage is configured (bulkhead and timeout always are).
func (pc PolicyConfig) has(stage string) bool {
	switch stage {
	case StageRetry:
		return pc.Retry != nil
	case StageBreaker:
		return pc.Breaker != nil
	case StageLimiter:
		return pc.Limiter != nil
	case StageBulkhead, StageTimeout:
		return true
	}
	return false
}

// Validate reports the first invalid field of the stack as a *ConfigError
// whose Field is relative to the stack ("retry.attempts"); t is the
// service's T and mode its layout's mode.
func (pc PolicyConfig) Validate(t time.Duration, mode Mode) error {
	if pc.Order != nil {
		var seen []string
		for _, s := range pc.Order {
			switch {
			case !slices.Contains(DefaultOrder, s):
				return fieldErrorf("order", "unknown stage %q; stages are %s", s, strings.Join(DefaultOrder, ", "))
			case slices.Contains(seen, s):
				return fieldErrorf("order", "%s is listed twice", s)
			case !pc.has(s):
				return fieldErrorf("order", "%s is not configured in this stack", s)
			}
			seen = append(seen, s)
		}
		for _, s := range DefaultOrder {
			if pc.has(s) && !slices.Contains(seen, s) {
				return fieldErrorf("order", "must list every stage of the stack: %s is missing", s)
			}
		}
	}
	switch {
	case pc.Timeout < 0 || pc.Timeout > t:
		return fieldErrorf("timeout", "must be between 0 (T) and T (%s), got %s", t, pc.Timeout)
	case pc.Bulkhead != "" && pc.Bulkhead != BulkheadPool && pc.Bulkhead != BulkheadFailsafe:
		return fieldErrorf("bulkhead", "must be %q or %q, got %q", BulkheadPool, BulkheadFailsafe, pc.Bulkhead)
	case pc.Bulkhead == BulkheadFailsafe && mode != ModeBulkhead:
		return fieldErrorf("bulkhead", "failsafe replaces the endpoint's own pool, so it needs bulkhead mode")
	case pc.RetryAfter < 0 || pc.RetryAfter > time.Hour:
		return fieldErrorf("retry_after", "must be between 0 (none) and 1h, got %s", pc.RetryAfter)
	case pc.Limit < 0 || pc.Limit > maxPoolDimension:
		return fieldErrorf("limit", "must be between 0 (none) and %d, got %d", maxPoolDimension, pc.Limit)
	case pc.Limit > 0 && pc.Bulkhead == BulkheadFailsafe:
		return fieldErrorf("limit", "nests in the project's pool; failsafe's bulkhead replaces that pool")
	}
	if r := pc.Retry; r != nil {
		if err := r.validate(); err != nil {
			return prefixField(err, func(f string) string { return "retry." + f })
		}
	}
	if b := pc.Breaker; b != nil {
		if err := b.validate(); err != nil {
			return prefixField(err, func(f string) string { return "breaker." + f })
		}
	}
	if l := pc.Limiter; l != nil {
		if err := l.validate(); err != nil {
			return prefixField(err, func(f string) string { return "limiter." + f })
		}
	}
	return nil
}

func validOutcomes(on []string) error {
	for _, o := range on {
		if !slices.Contains(Outcomes, o) {
			return fieldErrorf("on", "unknown outcome %q; outcomes are %s", o, strings.Join(Outcomes, ", "))
		}
	}
	return nil
}

func (r RetryConfig) validate() error {
	switch {
	case r.Attempts < 2 || r.Attempts > 100:
		return fieldErrorf("attempts", "must be between 2 and 100 (the first attempt included), got %d", r.Attempts)
	case r.Backoff < 0 || r.Backoff > time.Minute:
		return fieldErrorf("backoff", "must be between 0 and 1m, got %s", r.Backoff)
	case r.MaxBackoff != 0 && (r.MaxBackoff < r.Backoff || r.MaxBackoff > time.Minute):
		return fieldErrorf("max_backoff", "must be between backoff (%s) and 1m, got %s", r.Backoff, r.MaxBackoff)
	case r.Jitter < 0 || r.Jitter > 1:
		return fieldErrorf("jitter", "must be a share between 0 and 1, got %g", r.Jitter)
	}
	if err := validOutcomes(r.On); err != nil {
		return err
	}
	if b := r.Budget; b != nil {
		switch {
		case !(b.MaxRate > 0 && b.MaxRate <= 1):
			return fieldErrorf("budget.max_rate", "must be in (0, 1], got %g", b.MaxRate)
		case b.MinConcurrency < 0 || b.MinConcurrency > 1<<20:
			return fieldErrorf("budget.min_concurrency", "must be between 0 and 1048576, got %d", b.MinConcurrency)
		}
	}
	return nil
}

func (b BreakerConfig) validate() error {
	switch {
	case b.Kind != "" && b.Kind != BreakerCount && b.Kind != BreakerTime:
		return fieldErrorf("kind", "must be %q or %q, got %q", BreakerCount, BreakerTime, b.Kind)
	case b.Failures < 1 || b.Failures > 1<<20:
		return fieldErrorf("failures", "must be between 1 and 1048576, got %d", b.Failures)
	case b.Kind == BreakerTime && b.Of != 0:
		return fieldErrorf("of", "is for count breakers; a time breaker counts failures within period")
	case b.Of != 0 && (b.Of < b.Failures || b.Of > 1<<20):
		return fieldErrorf("of", "must be 0 (consecutive failures) or between failures (%d) and 1048576, got %d", b.Failures, b.Of)
	case b.Kind == BreakerTime && (b.Period < MinBreakerPeriod || b.Period > time.Hour):
		// failsafe-go splits the period into 10 buckets and divides by their
		// length: below 10ns every call would panic.
		return fieldErrorf("period", "a time breaker needs a period between %s and 1h, got %s", MinBreakerPeriod, b.Period)
	case b.Kind != BreakerTime && b.Period != 0:
		return fieldErrorf("period", "is for time breakers (kind: time)")
	case b.Delay <= 0 || b.Delay > time.Hour:
		return fieldErrorf("delay", "must be between 1ns and 1h, got %s", b.Delay)
	case b.HalfOpenTrials < 0 || b.HalfOpenTrials > 1<<20:
		return fieldErrorf("half_open_trials", "must be between 0 and 1048576, got %d", b.HalfOpenTrials)
	}
	return validOutcomes(b.On)
}

// MinBreakerPeriod is the shortest period of a time-based breaker.
const MinBreakerPeriod = time.Millisecond

func (l LimiterConfig) validate() error {
	switch {
	case l.Min < 1:
		return fieldErrorf("min", "must be at least 1, got %d", l.Min)
	case l.Max < l.Min || l.Max > 1<<20:
		return fieldErrorf("max", "must be between min (%d) and 1048576, got %d", l.Min, l.Max)
	case l.Initial < l.Min || l.Initial > l.Max:
		return fieldErrorf("initial", "must be between min (%d) and max (%d), got %d", l.Min, l.Max, l.Initial)
	case l.Window < 0 || l.Window > time.Hour:
		return fieldErrorf("window", "must be between 0 (1s) and 1h, got %s", l.Window)
	case l.MinSamples < 0 || l.MinSamples > 1<<20:
		return fieldErrorf("min_samples", "must be between 0 (50) and 1048576, got %d", l.MinSamples)
	case l.MaxLimitFactor != 0 && (l.MaxLimitFactor < 1 || l.MaxLimitFactor > 1000):
		return fieldErrorf("max_limit_factor", "must be 0 (5) or between 1 and 1000, got %g", l.MaxLimitFactor)
	}
	return nil
}

// The JSON form of a PolicyConfig is what ServeArgs passes to the service
// process (--policy NAME=JSON): snake_case keys and durations as Go
// duration strings ("250ms"), so that a person can write one too.

type policyWire struct {
	Order      []string     `json:"order,omitempty"`
	Timeout    string       `json:"timeout,omitempty"`
	Bulkhead   string       `json:"bulkhead,omitempty"`
	Retry      *retryWire   `json:"retry,omitempty"`
	Breaker    *breakerWire `json:"breaker,omitempty"`
	Limiter    *limiterWire `json:"limiter,omitempty"`
	RetryAfter string       `json:"retry_after,omitempty"`
	Limit      int          `json:"limit,omitempty"`
}

type retryWire struct {
	Attempts   int           `json:"attempts"`
	Backoff    string        `json:"backoff,omitempty"`
	MaxBackoff string        `json:"max_backoff,omitempty"`
	Jitter     float64       `json:"jitter,omitempty"`
	Seed       uint64        `json:"seed,omitempty"`
	On         []string      `json:"on,omitempty"`
	Budget     *BudgetConfig `json:"budget,omitempty"`
}

type breakerWire struct {
	Kind           string   `json:"kind,omitempty"`
	Failures       int      `json:"failures"`
	Of             int      `json:"of,omitempty"`
	Period         string   `json:"period,omitempty"`
	Delay          string   `json:"delay"`
	HalfOpenTrials int      `json:"half_open_trials,omitempty"`
	On             []string `json:"on,omitempty"`
}

type limiterWire struct {
	Min            int     `json:"min"`
	Max            int     `json:"max"`
	Initial        int     `json:"initial"`
	Window         string  `json:"window,omitempty"`
	MinSamples     int     `json:"min_samples,omitempty"`
	MaxLimitFactor float64 `json:"max_limit_factor,omitempty"`
}

func durString(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// MarshalJSON renders the stack as --policy takes it.
func (pc PolicyConfig) MarshalJSON() ([]byte, error) {
	w := policyWire{Order: pc.Order, Timeout: durString(pc.Timeout), Bulkhead: pc.Bulkhead, RetryAfter: durString(pc.RetryAfter), Limit: pc.Limit}
	if r := pc.Retry; r != nil {
		w.Retry = &retryWire{Attempts: r.Attempts, Backoff: durString(r.Backoff), MaxBackoff: durString(r.MaxBackoff),
			Jitter: r.Jitter, Seed: r.Seed, On: r.On, Budget: r.Budget}
	}
	if b := pc.Breaker; b != nil {
		w.Breaker = &breakerWire{Kind: b.Kind, Failures: b.Failures, Of: b.Of, Period: durString(b.Period),
			Delay: b.Delay.String(), HalfOpenTrials: b.HalfOpenTrials, On: b.On}
	}
	if l := pc.Limiter; l != nil {
		w.Limiter = &limiterWire{Min: l.Min, Max: l.Max, Initial: l.Initial, Window: durString(l.Window),
			MinSamples: l.MinSamples, MaxLimitFactor: l.MaxLimitFactor}
	}
	return json.Marshal(w)
}

// UnmarshalJSON parses the form MarshalJSON writes; unknown keys are errors.
func (pc *PolicyConfig) UnmarshalJSON(b []byte) error {
	var w policyWire
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return err
	}
	var errs []string
	dur := func(field, s string) time.Duration {
		if s == "" {
			return 0
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", field, err))
		}
		return d
	}
	out := PolicyConfig{Order: w.Order, Timeout: dur("timeout", w.Timeout), Bulkhead: w.Bulkhead, RetryAfter: dur("retry_after", w.RetryAfter), Limit: w.Limit}
	if r := w.Retry; r != nil {
		out.Retry = &RetryConfig{Attempts: r.Attempts, Backoff: dur("retry.backoff", r.Backoff),
			MaxBackoff: dur("retry.max_backoff", r.MaxBackoff), Jitter: r.Jitter, Seed: r.Seed, On: r.On, Budget: r.Budget}
	}
	if br := w.Breaker; br != nil {
		out.Breaker = &BreakerConfig{Kind: br.Kind, Failures: br.Failures, Of: br.Of, Period: dur("breaker.period", br.Period),
			Delay: dur("breaker.delay", br.Delay), HalfOpenTrials: br.HalfOpenTrials, On: br.On}
	}
	if l := w.Limiter; l != nil {
		out.Limiter = &LimiterConfig{Min: l.Min, Max: l.Max, Initial: l.Initial, Window: dur("limiter.window", l.Window),
			MinSamples: l.MinSamples, MaxLimitFactor: l.MaxLimitFactor}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	*pc = out
	return nil
}

// ParsePolicies parses --policy values, NAME=JSON each, into a map (nil for
// none). A name given twice is an error; which names exist is the
// service's business (Config.Validate).
func ParsePolicies(vals []string) (map[string]PolicyConfig, error) {
	if len(vals) == 0 {
		return nil, nil
	}
	out := map[string]PolicyConfig{}
	for _, v := range vals {
		name, js, ok := strings.Cut(v, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("%q is not NAME=JSON (example: a={\"breaker\":{\"failures\":5,\"delay\":\"1s\"}})", v)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%s given twice", name)
		}
		var pc PolicyConfig
		if err := json.Unmarshal([]byte(js), &pc); err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		out[name] = pc
	}
	return out, nil
}

// PolicyArgs renders policies as --policy flags, in the order of names.
func PolicyArgs(policies map[string]PolicyConfig, names []string) []string {
	var args []string
	for _, n := range names {
		pc, ok := policies[n]
		if !ok {
			continue
		}
		b, err := json.Marshal(pc)
		if err != nil {
			panic(err) // a PolicyConfig always marshals
		}
		args = append(args, "--policy", n+"="+string(b))
	}
	return args
}
