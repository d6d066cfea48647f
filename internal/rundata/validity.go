package rundata

import (
	"fmt"
	"math"
	"time"
)

// Rule is the id of a validity rule of the load generator (docs/design.md
// §4, "Validity"): what a Broken record says was broken. The analysis
// gives each its words; the run data carry only the id and the numbers.
type Rule string

// The validity rules of an endpoint's phase.
const (
	// RuleLag: the schedule lag p99 reached the threshold. Measured is the
	// p99, Limit the threshold, Max the largest lag (ns).
	RuleLag Rule = "lag"
	// RuleCanary: the canary's latency p99 passed its limit. Measured is
	// the p99, Limit the limit (ns).
	RuleCanary Rule = "canary"
	// RuleRate: the sends were off the schedule by more than the
	// tolerance. Measured is the achieved rate, Limit the target rate
	// (/s); Count the sends, Of the schedule's, Tolerance the sends of
	// slack.
	RuleRate Rule = "rate"
	// RuleHarness: too many load-generator errors. Measured is their share
	// of the schedule's sends, Limit the largest allowed (%); Count the
	// errors, Of the schedule's sends.
	RuleHarness Rule = "harness_errors"
	// RuleUnsent: scheduled requests were never sent. Measured is how
	// many, Limit 0.
	RuleUnsent Rule = "unsent"
	// RuleHealth: the target was unhealthy in a phase the health rule
	// judges. Measured is the success share, Limit the least allowed (%);
	// Unanswered the share without an answer and MaxUnanswered its limit
	// (%); Classes the share (%) of each other class with results; Count
	// the results judged (0: the phase had none).
	RuleHealth Rule = "health"
	// RuleStationary: the phase was not yet steady (a warm-up too short).
	// Measured is its first half's value and Limit its second half's: the
	// median of the windows' p50 latency (ns), or the success share (%).
	// Warmup is the warm-up before it.
	RuleStationary Rule = "stationary"
	// RuleInterrupted: the phase ended early. Measured is how long it ran,
	// Limit how long it was planned (ns).
	RuleInterrupted Rule = "interrupted"
)

// The validity rules of a load sent by several shards; each makes every
// judged phase of the run INVALID, and names the Shard (but
// RuleShardsMissing).
const (
	// RuleShardsMissing: not every shard reported.
	RuleShardsMissing Rule = "shards_missing"
	// RuleShardFailed: a shard's stream failed, with Error.
	RuleShardFailed Rule = "shard_failed"
	// RuleShardStopped: a shard stopped before the end.
	RuleShardStopped Rule = "shard_stopped"
	// RuleShardLate: a shard started late. Measured is how long after t0,
	// Limit the lag threshold (ns).
	RuleShardLate Rule = "shard_late"
	// RuleShardClock: a shard's clock is known too roughly. Measured is
	// the bound on its offset's error, Limit the largest allowed (ns).
	RuleShardClock Rule = "shard_clock"
	// RuleShardLag: too many of a shard's requests were late in
	// LatePhase. Measured is their share, Limit the largest allowed (%);
	// Threshold the lag threshold.
	RuleShardLag Rule = "shard_lag"
)

// Rules lists every rule, in the order a report lists them.
var Rules = []Rule{RuleLag, RuleCanary, RuleRate, RuleHarness, RuleUnsent, RuleHealth, RuleStationary, RuleInterrupted,
	RuleShardsMissing, RuleShardFailed, RuleShardStopped, RuleShardLate, RuleShardClock, RuleShardLag}

// Known reports whether r is one of Rules.
func (r Rule) Known() bool {
	for _, k := range Rules {
		if r == k {
			return true
		}
	}
	return false
}

// Shard reports whether r is a rule of a load sent by several shards
// (all of which but RuleShardsMissing name one).
func (r Rule) Shard() bool {
	switch r {
	case RuleShardsMissing, RuleShardFailed, RuleShardStopped, RuleShardLate, RuleShardClock, RuleShardLag:
		return true
	}
	return false
}

// Unit is the unit of a Broken record's Measured and Limit.
type Unit string

// Units of a Broken record.
const (
	UnitCount     Unit = ""   // a number of requests, or nothing measured
	UnitNanos     Unit = "ns" // a duration in nanoseconds
	UnitPerSecond Unit = "/s" // a rate
	UnitPercent   Unit = "%"  // a share, 0–100
)

// Broken is the record of one validity rule an endpoint's phase broke, as
// the load generator judged it: in phases.json (PhaseStats.Broken), in
// meta.json (PhaseValidity.Broken, Attempt.Broken). The fields beyond
// Measured, Limit and Unit are set only by the rules whose comment names
// them (zero otherwise).
type Broken struct {
	Rule Rule `json:"rule"`
	// Endpoint and Phase are the endpoint's phase that broke it.
	Endpoint string `json:"endpoint"`
	Phase    string `json:"phase"`
	// Measured is the value that broke the rule and Limit the rule's
	// limit, both in Unit.
	Measured float64 `json:"measured"`
	Limit    float64 `json:"limit"`
	Unit     Unit    `json:"unit,omitempty"`
	// Max is the largest schedule lag (RuleLag), in Unit.
	Max float64 `json:"max,omitempty"`
	// Count and Of are the sends and the schedule's (RuleRate), the
	// load-generator errors and the schedule's sends (RuleHarness), or the
	// results judged (RuleHealth, Count only).
	Count int64 `json:"count,omitempty"`
	Of    int64 `json:"of,omitempty"`
	// Tolerance is the sends of slack of RuleRate.
	Tolerance float64 `json:"tolerance,omitempty"`
	// Unanswered and MaxUnanswered are RuleHealth's share of results
	// without an answer and its limit (%); Classes the share (%) of each
	// class but ok that had results, in class order.
	Unanswered    float64      `json:"unanswered,omitempty"`
	MaxUnanswered float64      `json:"max_unanswered,omitempty"`
	Classes       []ClassShare `json:"classes,omitempty"`
	// Warmup is the warm-up before a phase that broke RuleStationary.
	Warmup time.Duration `json:"warmup_ns,omitempty"`
	// Shard is the index of the shard a shard rule names (nil for
	// RuleShardsMissing and the other rules).
	Shard *int `json:"shard,omitempty"`
	// Error is why the shard's stream failed (RuleShardFailed).
	Error string `json:"error,omitempty"`
	// Threshold is the lag threshold and LatePhase the phase the shard's
	// requests were late in (RuleShardLag).
	Threshold time.Duration `json:"threshold_ns,omitempty"`
	LatePhase string        `json:"late_phase,omitempty"`
}

// ClassShare is the share (%) of a phase's results of one class.
type ClassShare struct {
	Class Class   `json:"class"`
	Share float64 `json:"share"`
}

// Where is the endpoint's phase of b, "a/baseline": the key the analysis
// lists the places of a rule's breaks by.
func (b Broken) Where() string { return b.Endpoint + "/" + b.Phase }

// FieldError is what is wrong with one field of a record.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// Check reports what is wrong with b as a record of this contract, as a
// *FieldError naming the field: a rule not of Rules, a unit not of the
// units, no endpoint or phase, a negative count, a shard rule without its
// shard (or another rule with one), a class share of no class. Values that
// JSON cannot carry (NaN, ±Inf) are refused too.
func (b Broken) Check() error {
	bad := func(field, format string, args ...any) error {
		return &FieldError{Field: field, Err: fmt.Errorf(format, args...)}
	}
	switch {
	case !b.Rule.Known():
		return bad("rule", "%q is not a validity rule", b.Rule)
	case b.Unit != UnitCount && b.Unit != UnitNanos && b.Unit != UnitPerSecond && b.Unit != UnitPercent:
		return bad("unit", "%q is not a unit", b.Unit)
	case b.Endpoint == "":
		return bad("endpoint", "empty")
	case b.Phase == "":
		return bad("phase", "empty")
	case b.Count < 0:
		return bad("count", "%d is negative", b.Count)
	case b.Of < 0:
		return bad("of", "%d is negative", b.Of)
	case (b.Rule.Shard() && b.Rule != RuleShardsMissing) != (b.Shard != nil):
		return bad("shard", "a rule of one shard names it, no other rule names one")
	case b.Shard != nil && *b.Shard < 0:
		return bad("shard", "%d is negative", *b.Shard)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"measured", b.Measured}, {"limit", b.Limit}, {"max", b.Max}, {"tolerance", b.Tolerance},
		{"unanswered", b.Unanswered}, {"max_unanswered", b.MaxUnanswered}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return bad(f.name, "%v is not a number", f.v)
		}
	}
	for i, c := range b.Classes {
		if c.Class >= NumClasses {
			return bad(fmt.Sprintf("classes[%d].class", i), "%v is not a class", c.Class)
		}
		if math.IsNaN(c.Share) || math.IsInf(c.Share, 0) {
			return bad(fmt.Sprintf("classes[%d].share", i), "%v is not a number", c.Share)
		}
	}
	return nil
}
