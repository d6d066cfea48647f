package service

import (
	"context"
	"errors"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/backoff"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/failsafe-go/failsafe-go/budget"
	fbulkhead "github.com/failsafe-go/failsafe-go/bulkhead"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
)

// stackCall is one layer of a stack: it returns the dependency's result, or
// an error that failureOutcome can name.
type stackCall func(ctx context.Context) (callResult, error)

// depFailure is a dependency call that did not succeed (error, timeout or
// cancelled), as an error the policies can handle.
type depFailure struct{ res callResult }

func (e *depFailure) Error() string { return e.res.err.Error() }

// failureOutcome names the outcome of a failed stack call: one of Outcomes,
// or outcomeCancelled when the client went away.
func failureOutcome(err error) string {
	var df *depFailure
	switch {
	case errors.As(err, &df):
		if df.res.outcome == outcomeTimeout || df.res.outcome == outcomeCancelled {
			return df.res.outcome
		}
		return OutcomeError
	case errors.Is(err, context.DeadlineExceeded):
		return OutcomeTimeout
	case errors.Is(err, ErrCancelled), errors.Is(err, context.Canceled):
		return outcomeCancelled
	case errors.Is(err, ErrFull), errors.Is(err, ErrWaitTimeout), errors.Is(err, fbulkhead.ErrFull):
		return OutcomeRejected
	case errors.Is(err, circuitbreaker.ErrOpen):
		return OutcomeCircuitOpen
	case errors.Is(err, adaptivelimiter.ErrExceeded):
		return OutcomeLimited
	}
	return OutcomeError
}

// outcomeSet returns a predicate for a policy's On list (nil: error, timeout).
func outcomeSet(on []string) func(callResult, error) bool {
	if on == nil {
		on = []string{OutcomeError, OutcomeTimeout}
	}
	set := map[string]bool{}
	for _, o := range on {
		set[o] = true
	}
	return func(_ callResult, err error) bool { return err != nil && set[failureOutcome(err)] }
}

// stack is one endpoint's composed policies. Safe for concurrent use.
type stack struct {
	call       stackCall
	retryAfter string // Retry-After value of the endpoint's 503s, "" for none
}

// stackDeps is what a stack is built from besides its config.
type stackDeps struct {
	endpoint string
	pool     *Pool
	// limit, if set, is the endpoint's nested bulkhead (PolicyConfig.Limit),
	// acquired before pool.
	limit   *Pool
	dep     *dependency
	timeout time.Duration
	maxWait time.Duration
	maxBody int64
	observe func(callResult)
	metrics *policyMetrics
	// defects are the service's test defects; the leaks act on pool's
	// permit in the bulkhead stage.
	defects defectSet
}

// newStack composes cfg's stages around the dependency call, outer first.
func newStack(cfg PolicyConfig, d stackDeps) *stack {
	s := &stack{}
	if cfg.RetryAfter > 0 {
		s.retryAfter = strconv.Itoa(int(math.Ceil(cfg.RetryAfter.Seconds())))
	}
	id := func(ctx context.Context) string { v, _ := ctx.Value(requestIDKey{}).(string); return v }
	call := stackCall(func(ctx context.Context) (callResult, error) {
		res := d.dep.call(ctx, id(ctx), d.maxBody)
		d.observe(res)
		if res.outcome != outcomeOK {
			return res, &depFailure{res}
		}
		return res, nil
	})
	order := cfg.order()
	for i := len(order) - 1; i >= 0; i-- {
		call = buildStage(order[i], cfg, d, call)
	}
	s.call = call
	return s
}

type requestIDKey struct{}

func buildStage(name string, cfg PolicyConfig, d stackDeps, next stackCall) stackCall {
	m := d.metrics
	switch name {
	case StageTimeout:
		t := d.timeout
		if cfg.Timeout > 0 {
			t = cfg.Timeout
		}
		// The standard library's deadline rather than failsafe-go's timeout:
		// its cancellation carries DeadlineExceeded, so the dependency's
		// outcome (and bulkheadlab_dependency_requests_total) says timeout
		// exactly as without a stack.
		return func(ctx context.Context) (callResult, error) {
			ctx, cancel := context.WithTimeout(ctx, t)
			defer cancel()
			return next(ctx)
		}
	case StageBulkhead:
		if cfg.Bulkhead == BulkheadFailsafe {
			return failsafeBulkheadStage(d, next)
		}
		held := poolStage(d.pool, d.defects, next)
		limit := d.limit
		if limit == nil {
			return held
		}
		return func(ctx context.Context) (callResult, error) {
			lp, err := limit.Acquire(ctx)
			if err != nil {
				return callResult{}, err
			}
			defer lp.Release()
			return held(ctx)
		}
	case StageBreaker:
		return breakerStage(*cfg.Breaker, m, next)
	case StageLimiter:
		return limiterStage(*cfg.Limiter, m, next)
	case StageRetry:
		return retryStage(*cfg.Retry, m, next)
	}
	panic("service: unknown stage " + name) // Validate refuses it
}

// poolStage holds a permit of pool around next: released on every path,
// panics included, unless a leak defect of defects keeps it.
func poolStage(pool *Pool, defects defectSet, next stackCall) stackCall {
	return func(ctx context.Context) (callResult, error) {
		permit, err := pool.Acquire(ctx)
		if err != nil {
			return callResult{}, err
		}
		defer func() { permit.Release() }()
		res, err := next(ctx)
		if defects.leaksOn(err) {
			permit = Permit{} // TEST DEFECT: the permit is never released
		}
		return res, err
	}
}

// run executes next under one failsafe-go policy.
func run(ctx context.Context, p failsafe.Policy[callResult], next stackCall) (callResult, error) {
	return failsafe.With(p).WithContext(ctx).GetWithExecution(func(exec failsafe.Execution[callResult]) (callResult, error) {
		return next(exec.Context())
	})
}

func breakerStage(c BreakerConfig, m *policyMetrics, next stackCall) stackCall {
	b := circuitbreaker.NewBuilder[callResult]().HandleIf(outcomeSet(c.On)).WithDelay(c.Delay)
	switch {
	case c.Kind == BreakerTime:
		b = b.WithFailureThresholdPeriod(uint(c.Failures), c.Period)
	case c.Of > 0:
		b = b.WithFailureThresholdRatio(uint(c.Failures), uint(c.Of))
	default:
		b = b.WithFailureThreshold(uint(c.Failures))
	}
	if c.HalfOpenTrials > 0 {
		b = b.WithSuccessThreshold(uint(c.HalfOpenTrials))
	}
	m.breakerState.Set(breakerClosed)
	b = b.OnStateChanged(func(e circuitbreaker.StateChangedEvent) { m.breakerChanged(e.NewState, time.Now()) })
	cb := b.Build()
	return func(ctx context.Context) (callResult, error) {
		res, err := run(ctx, cb, next)
		if errors.Is(err, circuitbreaker.ErrOpen) {
			m.breakerRejected.Inc()
		}
		return res, err
	}
}

func limiterStage(c LimiterConfig, m *policyMetrics, next stackCall) stackCall {
	window, samples := c.Window, c.MinSamples
	if window == 0 {
		window = time.Second
	}
	if samples == 0 {
		samples = 50
	}
	b := adaptivelimiter.NewBuilder[callResult]().
		WithLimits(uint(c.Min), uint(c.Max), uint(c.Initial)).
		WithRecentWindow(window, max(window, 30*time.Second), uint(samples)).
		OnLimitExceeded(func(failsafe.ExecutionEvent[callResult]) { m.limiterRejected.Inc() })
	if c.MaxLimitFactor > 0 {
		b = b.WithMaxLimitFactor(c.MaxLimitFactor)
	}
	l := b.Build()
	m.limiter(l)
	return func(ctx context.Context) (callResult, error) { return run(ctx, l, next) }
}

func retryStage(c RetryConfig, m *policyMetrics, next stackCall) stackCall {
	delay := backoff.New(c.Backoff, c.MaxBackoff, c.Jitter, c.Seed)
	b := retrypolicy.NewBuilder[callResult]().HandleIf(outcomeSet(c.On)).WithMaxAttempts(c.Attempts).
		ReturnLastFailure().
		WithDelayFunc(func(exec failsafe.ExecutionAttempt[callResult]) time.Duration { return delay(exec.Retries()) }).
		OnRetry(func(failsafe.ExecutionEvent[callResult]) { m.retries.Inc() })
	if bc := c.Budget; bc != nil {
		b = b.WithBudget(budget.NewBuilder().WithMaxRate(bc.MaxRate).WithMinConcurrency(uint(bc.MinConcurrency)).
			OnBudgetExceeded(func(budget.ExceededEvent) { m.budgetExceeded.Inc() }).Build())
	}
	rp := b.Build()
	return func(ctx context.Context) (callResult, error) {
		var mu sync.Mutex
		var last callResult
		var lastErr error
		res, err := run(ctx, rp, func(ctx context.Context) (callResult, error) {
			countAttempt(ctx)
			r, e := next(ctx)
			mu.Lock()
			last, lastErr = r, e
			mu.Unlock()
			return r, e
		})
		if errors.Is(err, budget.ErrExceeded) {
			// A refused retry answers with the failure it would have retried.
			mu.Lock()
			defer mu.Unlock()
			return last, lastErr
		}
		return res, err
	}
}

// failsafeBulkheadStage is failsafe-go's bulkhead sized like the endpoint's
// pool, waiting at most the layout's MaxWait; its in-use count is kept here
// because failsafe-go does not export it.
func failsafeBulkheadStage(d stackDeps, next stackCall) stackCall {
	cfg := d.pool.Config()
	fb := newFailsafeBulkhead(d.pool.Name(), cfg, d.maxWait)
	d.metrics.failsafe = fb
	return func(ctx context.Context) (callResult, error) {
		res, err := run(ctx, fb.bh, func(ctx context.Context) (callResult, error) {
			fb.inUse.Add(1)
			defer fb.inUse.Add(-1)
			return next(ctx)
		})
		if errors.Is(err, fbulkhead.ErrFull) {
			fb.rejected.Add(1)
		}
		return res, err
	}
}
