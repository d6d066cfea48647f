package rundata

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
)

// Class is the outcome class of one request (docs/design.md §4).
type Class uint8

// The result classes, in report order.
const (
	ClassOK             Class = iota // 2xx
	ClassRejected                    // 503 with X-Bulkhead-Reject: a bulkhead said no
	ClassDepTimeout                  // 504 with X-Dependency-Error: timeout
	ClassDepError                    // 502 with X-Dependency-Error: error
	ClassClientTimeout               // the load generator gave up waiting
	ClassTransportError              // refused/reset at the service
	ClassOther                       // anything else
	// The classes of the policy stacks' refusals, after the original
	// seven so that those keep their numbers, and written to files only
	// when not zero so that runs without policies keep their bytes.
	ClassCircuitOpen // 503 with X-Circuit-Open: a breaker refused
	ClassLimited     // 503 with X-Concurrency-Limit: an adaptive limiter refused
	NumClasses       // number of classes; not a class
)

// numBaseClasses are the classes every Counts encoding lists, zero or not.
const numBaseClasses = ClassCircuitOpen

var classNames = [NumClasses]string{"ok", "rejected", "dep_timeout", "dep_error", "client_timeout", "transport_error", "other",
	"circuit_open", "limited"}

// String returns the class name used in files and reports, e.g. "dep_timeout".
func (c Class) String() string {
	if c < NumClasses {
		return classNames[c]
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

// ParseClass is the inverse of Class.String.
func ParseClass(s string) (Class, error) {
	for i, n := range classNames {
		if n == s {
			return Class(i), nil
		}
	}
	return 0, fmt.Errorf("unknown result class %q (classes: %s)", s, strings.Join(classNames[:], ", "))
}

// MarshalText implements encoding.TextMarshaler.
func (c Class) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *Class) UnmarshalText(b []byte) error {
	v, err := ParseClass(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// Counts holds a count per class. It encodes to JSON as an object keyed by
// class name ({"ok":120,"rejected":3,...}); zero counts are kept, except
// those of the policy classes (circuit_open, limited).
type Counts [NumClasses]int64

// Total is the sum over all classes.
func (c Counts) Total() int64 {
	var t int64
	for _, v := range c {
		t += v
	}
	return t
}

// Failed is Total minus ok.
func (c Counts) Failed() int64 { return c.Total() - c[ClassOK] }

// MarshalJSON implements json.Marshaler.
func (c Counts) MarshalJSON() ([]byte, error) {
	m := make(map[string]int64, NumClasses)
	for i, v := range c {
		if v != 0 || Class(i) < numBaseClasses {
			m[classNames[i]] = v
		}
	}
	return json.Marshal(m)
}

// UnmarshalJSON implements json.Unmarshaler. Unknown class names are an error.
func (c *Counts) UnmarshalJSON(b []byte) error {
	var m map[string]int64
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*c = Counts{}
	for k, v := range m {
		cl, err := ParseClass(k)
		if err != nil {
			return err
		}
		c[cl] = v
	}
	return nil
}

// Quantiles summarises a closed latency histogram. All zero when Count is 0.
type Quantiles struct {
	Count int64         `json:"count"`
	P50   time.Duration `json:"p50_ns"`
	P90   time.Duration `json:"p90_ns"`
	P99   time.Duration `json:"p99_ns"`
	P999  time.Duration `json:"p999_ns"`
	Max   time.Duration `json:"max_ns"`
	Mean  time.Duration `json:"mean_ns"`
}

// Window is the closed statistics of one endpoint over one time window. It is
// the unit of run data: the runner writes one JSON line per Window to
// windows.jsonl and analysis reads them back. Fields may be added; none may
// change meaning.
type Window struct {
	// Endpoint is the target name, "a" or "b" for the built-in service.
	Endpoint string `json:"endpoint"`
	// Phase is the caller's phase label at the window start (e.g. "fault").
	Phase string `json:"phase"`
	// Index is the window number from the attack start, 0-based.
	Index int `json:"index"`
	// Start is the wall-clock start of the window; windows are assigned by
	// each request's intended send time.
	Start time.Time `json:"start"`
	// Offset is Start minus the attack start.
	Offset time.Duration `json:"offset_ns"`
	// Duration is the window length.
	Duration time.Duration `json:"duration_ns"`
	// Counts holds the results per class.
	Counts Counts `json:"counts"`
	// TargetRate is the configured rate in requests per second in effect at
	// the window's start (a window that straddles a change of rate at a
	// phase boundary reports the earlier rate; Expected counts both).
	TargetRate float64 `json:"target_rate"`
	// Rate is the achieved send rate in requests per second.
	Rate float64 `json:"rate"`
	// Latency is measured as vegeta does, from the actual send, over all results.
	Latency Quantiles `json:"latency"`
	// LatencyOK is Latency restricted to ok results.
	LatencyOK Quantiles `json:"latency_ok"`
	// LatencyIntended is measured from the intended send time (coordinated-
	// omission corrected), over all results.
	LatencyIntended Quantiles `json:"latency_intended"`
	// LagP99 and LagMax summarise schedule lag: actual minus intended send time.
	LagP99 time.Duration `json:"lag_p99_ns"`
	LagMax time.Duration `json:"lag_max_ns"`
	// Diverged is set when Latency and LatencyIntended disagree enough that
	// the window's latency cannot be read from vegeta's numbers alone.
	Diverged bool `json:"diverged,omitempty"`
	// Sent is the number of requests actually sent during the window (by
	// actual send time); Rate is Sent/Duration.
	Sent int64 `json:"sent"`
	// Expected is the number of requests the schedule put in the window (by
	// intended send time); Counts.Total() equals it unless Partial.
	Expected int64 `json:"expected"`
	// HarnessErrors counts results whose failure happened on the load
	// generator's side (see IsHarnessError); they are also in Counts.
	HarnessErrors int64 `json:"harness_errors,omitempty"`
	// Cancelled counts the requests the client gave up on on purpose (the
	// load generator's Phase.Cancel); they are also in Counts, as
	// client_timeout.
	Cancelled int64 `json:"cancelled,omitempty"`
	// RetryCounts are the client's attempts for the window's requests, when
	// it retries (zero otherwise).
	RetryCounts
	// Partial is set when the window closed before all of its scheduled
	// requests came back: the run was stopped, requests were never sent, or
	// too many windows were open at once.
	Partial bool `json:"partial,omitempty"`
}

// RetryCounts counts what a retrying client (the load generator's
// Target.Retry) sent for a set of requests: every attempt is attributed to
// its request's intended send time, like the request's result. The fields
// are zero when the client does not retry.
type RetryCounts struct {
	// Attempts is every attempt sent, first attempts and Retries; the first
	// attempts are the offered load, all of them the delivered load.
	Attempts int64 `json:"attempts,omitempty"`
	Retries  int64 `json:"retries,omitempty"`
	// Retryable counts the attempts whose outcome was a class the client
	// retries, whether it retried them or not.
	Retryable int64 `json:"retryable_attempts,omitempty"`
	// Refused counts retryable outcomes not retried although attempts
	// remained: the client's retry budget refused, or the server's
	// Retry-After did not fit in what was left of the client's deadline.
	Refused int64 `json:"retries_refused,omitempty"`
}

// Add adds o's counts to a's.
func (a *RetryCounts) Add(o RetryCounts) {
	a.Attempts += o.Attempts
	a.Retries += o.Retries
	a.Retryable += o.Retryable
	a.Refused += o.Refused
}

// Amplification is attempts per first attempt (1 without retries); NaN
// when the client does not retry or sent nothing.
func (a RetryCounts) Amplification() float64 {
	if first := a.Attempts - a.Retries; first > 0 && a.Attempts > 0 {
		return float64(a.Attempts) / float64(first)
	}
	return math.NaN()
}

// RetryableShare is the share of attempts with a retryable outcome (the
// rejection share r of the retry-storm claim); NaN without attempts.
func (a RetryCounts) RetryableShare() float64 {
	if a.Attempts > 0 {
		return float64(a.Retryable) / float64(a.Attempts)
	}
	return math.NaN()
}
