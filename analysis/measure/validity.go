package measure

import (
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/render/words"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// The names of the validity rules as RuleBreak.Rule holds them (their
// words are words.Name's): the parts of the load generator's validity rule
// a run can break, and RuleOther for a run INVALID without a record of
// any.
var (
	RuleLag         = words.Name(rundata.RuleLag)
	RuleCanary      = words.Name(rundata.RuleCanary)
	RuleRate        = words.Name(rundata.RuleRate)
	RuleHarness     = words.Name(rundata.RuleHarness)
	RuleUnsent      = words.Name(rundata.RuleUnsent)
	RuleInterrupted = words.Name(rundata.RuleInterrupted)
	RuleHealth      = words.Name(rundata.RuleHealth)
	RuleStationary  = words.Name(rundata.RuleStationary)
	RuleShards      = words.Shards
	RuleOther       = words.Other
)

// ValidityRules lists the rules' names in the order a report shows them.
var ValidityRules = words.Names()

// RuleBreak is one validity rule a run broke: where, and its worst measured
// value against the limit (NaN, null in JSON, where the rule shows none).
type RuleBreak struct {
	Rule string `json:"rule"`
	// Where are the endpoints and phases that broke it, "a/baseline".
	Where    []string `json:"where"`
	Measured Num      `json:"measured"`
	Limit    Num      `json:"limit"`
	// Unit is the unit of Measured and Limit: "ms", "%", "/s" or "".
	Unit string `json:"unit,omitempty"`
	// Higher is set when Measured breaks the rule by being above Limit
	// (schedule lag), unset when by being below (success).
	Higher bool `json:"higher,omitempty"`
	// TransportErrors is, for the health rule, the largest share (%) of
	// transport errors (no HTTP answer: refused, reset, closed) of a phase
	// that broke it.
	TransportErrors Num `json:"transport_errors,omitempty"`
}

// Numbers are b's numbers as words.Numbers.
func (b RuleBreak) Numbers() words.Numbers {
	return words.Numbers{Measured: float64(b.Measured), Limit: float64(b.Limit), Unit: b.Unit, Higher: b.Higher}
}

// Against renders the break as its measured value against the limit,
// "7.8 ms > 5 ms", or the rule's name when it shows no number.
func (b RuleBreak) Against() string {
	if s := b.Numbers().String(); s != "" {
		return s
	}
	return b.Rule
}

// Worse reports whether b is a worse break of its rule than than: further
// past the limit, relative to it.
func (b RuleBreak) Worse(than RuleBreak) bool { return b.Numbers().Worse(than.Numbers()) }

// RuleBreaks reads the validity records of a run: per rule, its worst
// break and every place that broke it (words.Groups), in ValidityRules
// order.
func RuleBreaks(bs []rundata.Broken) []RuleBreak {
	var out []RuleBreak
	for _, g := range words.Groups(bs) {
		out = append(out, RuleBreak{Rule: g.Name, Where: g.Where, Measured: Num(g.Worst.Measured), Limit: Num(g.Worst.Limit),
			Unit: g.Worst.Unit, Higher: g.Worst.Higher})
	}
	for i := range out {
		if out[i].Rule == RuleHealth {
			out[i].TransportErrors = Num(transportShare(bs))
		}
	}
	return out
}

// transportShare is the largest share (%) of transport errors of a
// health break among bs; 0 if none has any.
func transportShare(bs []rundata.Broken) float64 {
	var out float64
	for _, b := range bs {
		if b.Rule != rundata.RuleHealth {
			continue
		}
		for _, c := range b.Classes {
			if c.Class == rundata.ClassTransportError {
				out = max(out, c.Share)
			}
		}
	}
	return out
}

// Attempt is an earlier, INVALID attempt of a run as a summary states it.
type Attempt struct {
	Started time.Time `json:"started"`
	// Folder is where its data were kept, under runs/ (e.g.
	// "slow-shared-r1.invalid-1").
	Folder string `json:"folder,omitempty"`
	// Reasons are the sentences of the rules it broke (words.Reason).
	Reasons []string `json:"reasons"`
	// Broken are the rules it broke, one entry per rule with its worst
	// value (RuleBreaks).
	Broken []RuleBreak `json:"broken_rules,omitempty"`
}

// attemptsOf reads the records of a run's earlier attempts.
func attemptsOf(as []rundata.Attempt) []Attempt {
	var out []Attempt
	for _, a := range as {
		out = append(out, Attempt{Started: a.Started, Folder: a.Folder, Reasons: words.Reasons(a.Broken), Broken: RuleBreaks(a.Broken)})
	}
	return out
}
