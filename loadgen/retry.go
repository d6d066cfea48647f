package loadgen

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/budget"
	"github.com/failsafe-go/failsafe-go/retrypolicy"

	"github.com/bulkheadlab/bulkheadlab/internal/backoff"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// Retry makes a target's client retry failed responses, as a client
// library does. Arrivals stay open-model: a request is due on the schedule
// whatever its predecessors do, and its retries come on top. A retried
// request's latency is the client's total, first send to last answer
// (retries and their delays included), and its class is the last attempt's.
// Every attempt is counted for the request's window (Window.RetryCounts).
type Retry struct {
	// Attempts is the most attempts, the first included, in [2, 10].
	Attempts int
	// On lists the classes retried; nil means DefaultRetryOn.
	On []Class
	// Backoff is the delay before the first retry, doubling up to
	// MaxBackoff (0: Backoff); Jitter varies each by up to ±Jitter (0–1)
	// from a generator seeded with Seed. Zero retries at once.
	Backoff, MaxBackoff time.Duration
	Jitter              float64
	Seed                uint64
	// HonorRetryAfter makes the client wait at least a response's
	// Retry-After (seconds or an HTTP date) before retrying it, and give up
	// (answer with that response) when the wait does not fit in what is
	// left of its deadline (the client timeout).
	HonorRetryAfter bool
	// Budget, if set, limits retries across all of the target's requests.
	Budget *RetryBudget
}

// DefaultRetryOn are the classes a client retries unless told otherwise:
// every failure the service answered, and transport errors. A client
// timeout is not retried: the deadline is spent.
var DefaultRetryOn = []Class{ClassRejected, ClassDepTimeout, ClassDepError, ClassTransportError,
	ClassOther, ClassCircuitOpen, ClassLimited}

// RetryBudget limits a client's retries. Exactly one kind is set.
type RetryBudget struct {
	// Ratio > 0 is a token budget (as Finagle's RetryBudget and gRPC's
	// retry throttling): every first attempt earns Ratio of a retry, a
	// retry spends one, and at most Reserve are saved (the starting
	// balance; 0 means 10). Retries are then at most Ratio of the requests
	// plus Reserve, however fast the failures come.
	Ratio   float64
	Reserve int
	// InFlight > 0 is failsafe-go's budget (like Envoy's retry budget): the
	// retries in flight may be at most InFlight of the requests in flight,
	// once MinConcurrency retries are in flight. It bounds concurrency, not
	// the rate: retries that fail fast pass through it quickly.
	InFlight       float64
	MinConcurrency int
}

// Validate checks r; a *FieldError names the field ("attempts").
func (r *Retry) Validate() error { return r.validate("") }

// validate checks r; prefix ends in "." or is empty.
func (r *Retry) validate(prefix string) error {
	switch {
	case r.Attempts < 2 || r.Attempts > 10:
		return invalid(prefix+"attempts", "%d is not in [2, 10] (the first attempt included)", r.Attempts)
	case r.Backoff < 0 || r.MaxBackoff < 0 || r.Backoff > time.Minute || r.MaxBackoff > time.Minute:
		return invalid(prefix+"backoff", "backoff %v and max backoff %v must be within [0, 1m]", r.Backoff, r.MaxBackoff)
	case r.MaxBackoff != 0 && r.MaxBackoff < r.Backoff:
		return invalid(prefix+"max_backoff", "%v is below the backoff %v", r.MaxBackoff, r.Backoff)
	case !(r.Jitter >= 0 && r.Jitter <= 1):
		return invalid(prefix+"jitter", "%v is not in [0, 1]", r.Jitter)
	}
	for i, c := range r.On {
		if c >= NumClasses || c == ClassOK {
			return invalid(fmt.Sprintf("%son[%d]", prefix, i), "%v is not a failure class", c)
		}
	}
	if b := r.Budget; b != nil {
		switch {
		case (b.Ratio > 0) == (b.InFlight > 0):
			return invalid(prefix+"budget", "set exactly one of ratio and in_flight, got ratio %v, in_flight %v", b.Ratio, b.InFlight)
		case !(b.Ratio >= 0 && b.Ratio <= 10):
			return invalid(prefix+"budget.ratio", "%v is not in (0, 10]", b.Ratio)
		case !(b.InFlight >= 0 && b.InFlight <= 1):
			return invalid(prefix+"budget.in_flight", "%v is not in (0, 1]", b.InFlight)
		case b.Reserve < 0 || b.Reserve > 1e6 || b.MinConcurrency < 0 || b.MinConcurrency > 1e6:
			return invalid(prefix+"budget", "reserve %d and min concurrency %d must be within [0, 1e6]", b.Reserve, b.MinConcurrency)
		}
	}
	return nil
}

// retryTransport is one target's retrying client: it sits between the
// http.Client (whose timeout is the deadline of all attempts together) and
// the transport, and reports every attempt to the aggregator.
type retryTransport struct {
	next  http.RoundTripper
	cfg   Retry
	on    [NumClasses]bool
	cl    *Classifier
	delay func(n int) time.Duration
	ratio *ratioBudget
	inf   budget.Budget
	// report receives one record per attempt (and one per refusal),
	// attributed to the request's intended send offset (from vegeta's
	// X-Vegeta-Seq header; -1 when it is missing).
	report func(intended int64, c rundata.RetryCounts)
	sched  schedule
}

func newRetryTransport(next http.RoundTripper, cfg Retry, cl *Classifier, sched schedule, report func(int64, rundata.RetryCounts)) *retryTransport {
	t := &retryTransport{next: next, cfg: cfg, cl: cl, sched: sched, report: report,
		delay: backoff.New(cfg.Backoff, cfg.MaxBackoff, cfg.Jitter, cfg.Seed)}
	on := cfg.On
	if on == nil {
		on = DefaultRetryOn
	}
	for _, c := range on {
		t.on[c] = true
	}
	if b := cfg.Budget; b != nil && b.Ratio > 0 {
		reserve := float64(b.Reserve)
		if b.Reserve == 0 {
			reserve = 10
		}
		t.ratio = &ratioBudget{ratio: b.Ratio, max: reserve, tokens: reserve}
	} else if b != nil {
		t.inf = budget.NewBuilder().WithMaxRate(b.InFlight).WithMinConcurrency(uint(b.MinConcurrency)).Build()
	}
	return t
}

// attemptState is one request's attempts so far.
type attemptState struct {
	n         int
	retryable bool // the last attempt's outcome is retried
	refused   bool // a retryable outcome was not retried although attempts remained
	wait      time.Duration
	resp      *http.Response
	err       error
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	intended := int64(-1)
	if seq, err := strconv.ParseInt(req.Header.Get("X-Vegeta-Seq"), 10, 64); err == nil && seq >= 0 {
		intended = t.sched.at(seq)
	}
	if t.ratio != nil {
		t.ratio.deposit()
	}
	st := &attemptState{}
	// The policy is built per request so that its predicates see this
	// request's state; a budget is shared by all of the target's requests.
	b := retrypolicy.NewBuilder[*http.Response]().
		HandleIf(func(*http.Response, error) bool { return st.retryable }).
		AbortIf(func(*http.Response, error) bool { return st.retryable && t.giveUp(req, st) }).
		WithMaxAttempts(t.cfg.Attempts).ReturnLastFailure().
		WithDelayFunc(func(exec failsafe.ExecutionAttempt[*http.Response]) time.Duration {
			return max(t.delay(exec.Retries()+1), st.wait)
		})
	if t.inf != nil {
		b = b.WithBudget(t.inf)
	}
	resp, err := failsafe.With(b.Build()).WithContext(req.Context()).Get(func() (*http.Response, error) {
		return t.attempt(req, st, intended)
	})
	if errors.Is(err, budget.ErrExceeded) {
		// A refused retry answers with the failure it would have retried.
		st.refused = true
		resp, err = st.resp, st.err
	}
	if st.refused {
		t.report(intended, rundata.RetryCounts{Refused: 1})
	}
	return resp, err
}

// attempt sends one attempt and classifies its outcome. A retryable
// response's body is read and closed, so that its connection is reused
// whether or not it is retried.
func (t *retryTransport) attempt(req *http.Request, st *attemptState, intended int64) (*http.Response, error) {
	st.n++
	r := req
	if st.n > 1 && req.Body != nil && req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		r = req.Clone(req.Context())
		r.Body = body
	}
	resp, err := t.next.RoundTrip(r)
	var code uint16
	var h http.Header
	errText := ""
	if err != nil {
		errText = err.Error()
	} else {
		code, h = uint16(resp.StatusCode), resp.Header
	}
	st.retryable = t.on[t.cl.Classify(code, h, errText)]
	if st.retryable && resp != nil {
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if rerr != nil {
			st.retryable = t.on[ClassTransportError]
			resp, err = nil, rerr
		} else {
			resp.Body = io.NopCloser(bytes.NewReader(body))
		}
	}
	st.resp, st.err = resp, err
	c := rundata.RetryCounts{Attempts: 1}
	if st.n > 1 {
		c.Retries = 1
	}
	if st.retryable {
		c.Retryable = 1
	}
	t.report(intended, c)
	return resp, err
}

// giveUp decides, for a retryable outcome, whether the client stops
// although attempts may remain: the server's Retry-After does not fit in
// the deadline, or the token budget has no retry left. It also sets the
// wait before the next attempt.
func (t *retryTransport) giveUp(req *http.Request, st *attemptState) bool {
	if st.n >= t.cfg.Attempts {
		return false // the attempts are spent: not a refusal
	}
	st.wait = 0
	if t.cfg.HonorRetryAfter && st.resp != nil {
		if d, ok := retryAfter(st.resp.Header.Get("Retry-After"), time.Now()); ok {
			if dl, has := req.Context().Deadline(); has && time.Until(dl) <= d {
				st.refused = true
				return true
			}
			st.wait = d
		}
	}
	if t.ratio != nil && !t.ratio.withdraw() {
		st.refused = true
		return true
	}
	return false
}

// retryAfter parses a Retry-After value: delay seconds or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s < 0 {
			return 0, false
		}
		return time.Duration(min(s, 1<<30)) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(0, at.Sub(now)), true
	}
	return 0, false
}

// ratioBudget is a token budget: deposits of ratio per request, one token
// per retry, at most max saved.
type ratioBudget struct {
	mu         sync.Mutex
	ratio, max float64
	tokens     float64
}

func (b *ratioBudget) deposit() {
	b.mu.Lock()
	b.tokens = min(b.max, b.tokens+b.ratio)
	b.mu.Unlock()
}

func (b *ratioBudget) withdraw() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
