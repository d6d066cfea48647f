package rundata

// Metric names of the service's policy stacks, each labelled
// dependency=<endpoint> like MetricDepRequests. Only the stages a stack
// configures export theirs.
const (
	// MetricBreakerState is 0 closed, 1 half-open, 2 open.
	MetricBreakerState       = "bulkheadlab_breaker_state"
	MetricBreakerTransitions = "bulkheadlab_breaker_transitions_total" // label to: closed, half_open, open
	// MetricBreakerOpenedAt is the Unix time of the breaker's last
	// transition to open (0 before the first), so that the time it opened
	// is known to the nanosecond, not to the sampling interval.
	MetricBreakerOpenedAt   = "bulkheadlab_breaker_opened_at_seconds"
	MetricBreakerRejected   = "bulkheadlab_breaker_rejected_total"
	MetricRetries           = "bulkheadlab_retries_total"
	MetricRetryBudgetRefuse = "bulkheadlab_retry_budget_exceeded_total"
	MetricLimiterLimit      = "bulkheadlab_limiter_limit"
	MetricLimiterInflight   = "bulkheadlab_limiter_inflight"
	MetricLimiterRejected   = "bulkheadlab_limiter_rejected_total"
)

// MetricConnWait is the histogram of the time the service's calls that got
// a connection slot waited for it (zero when one was free); its series are
// MetricConnWaitSum and MetricConnWaitCount.
const MetricConnWait = "bulkheadlab_conn_wait_seconds"

// MetricConnHold is the histogram of the time the service's calls held
// their connection slot, from getting it to its release: the query time
// of a database call, the round trip of an HTTP one, without the wait for
// a slot. Next to MetricConnWait it tells a slow dependency (hold time
// up) from a pool run dry (wait time up, hold time flat). Its series are
// MetricConnHoldSum and MetricConnHoldCount.
const MetricConnHold = "bulkheadlab_conn_hold_seconds"

// LimitPoolName is the name of an endpoint's bulkhead nested in its
// layout's pool (a policy's limit): a pool like any other in the service's
// metrics and in a run's meta.
func LimitPoolName(endpoint string) string { return endpoint + "-limit" }

// Response headers of the service and the dependency stubs: the load
// generator's rules classify answers by them.
const (
	HeaderRequestID = "X-Request-Id"
	// HeaderBulkheadReject marks the service's 503 from a full bulkhead
	// (value full or wait-timeout).
	HeaderBulkheadReject = "X-Bulkhead-Reject"
	// RejectRate is HeaderBulkheadReject's value on a rate limiter's
	// refusal (the ratelimit layout): over the rate, not over a bulkhead;
	// the built-in rules class it limited.
	RejectRate = "rate"
	// HeaderDependencyError marks the service's 504 (value timeout) and
	// 502 (value error) when a dependency call failed.
	HeaderDependencyError = "X-Dependency-Error"
	// Every refusal of the service is a 503 (an overloaded and a broken
	// dependency look the same to the caller); these say which policy
	// refused.
	HeaderCircuitOpen      = "X-Circuit-Open"      // the dependency's breaker is open (value: the endpoint)
	HeaderConcurrencyLimit = "X-Concurrency-Limit" // the adaptive limiter refused (value: exceeded)
	HeaderRetryAfter       = "Retry-After"
	// HeaderAttempts is the number of attempts a retrying stack made, on
	// every answer of an endpoint with a retry stage.
	HeaderAttempts = "X-Attempts"
	// HeaderDepOverloaded marks a stub's 503 answer to a request it had no
	// room for: "queue-full" (its queue was full) or "wait-timeout" (it
	// waited the longest a stub lets a request wait).
	HeaderDepOverloaded = "X-Dep-Overloaded"
	// HeaderDepName is the stub's name on each of its answers.
	HeaderDepName = "X-Dep-Name"
)
