package measure

import (
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Validity rules: the parts of the load generator's validity rule a run can
// break, as a reader names them. Every INVALID reason belongs to one.
const (
	RuleLag         = "schedule lag"
	RuleCanary      = "canary"
	RuleRate        = "send rate"
	RuleHarness     = "load-generator errors"
	RuleUnsent      = "unsent requests"
	RuleInterrupted = "interrupted"
	RuleHealth      = "baseline health"
	RuleStationary  = "warm-up"
	RuleOther       = "other"
)

// ValidityRules lists the rules in the order a report shows them.
var ValidityRules = []string{RuleLag, RuleCanary, RuleRate, RuleHarness, RuleUnsent, RuleHealth, RuleStationary, RuleInterrupted, RuleOther}

// RuleBreak is one validity rule a run broke: where, and its worst measured
// value against the limit (NaN, null in JSON, where the reason names none).
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
}

// Against renders the break as its measured value against the limit,
// "7.8 ms > 5 ms", or the rule's name when the reason carries no number.
func (b RuleBreak) Against() string {
	if math.IsNaN(float64(b.Measured)) {
		return b.Rule
	}
	op := "<"
	if b.Higher {
		op = ">"
	}
	if math.IsNaN(float64(b.Limit)) {
		return FmtHuman(float64(b.Measured)) + unitSuffix(b.Unit)
	}
	return FmtHuman(float64(b.Measured)) + unitSuffix(b.Unit) + " " + op + " " + FmtHuman(float64(b.Limit)) + unitSuffix(b.Unit)
}

func unitSuffix(u string) string {
	switch u {
	case "":
		return ""
	case "/s":
		return "/s"
	}
	return " " + u
}

// Worse reports whether b is a worse break of its rule than than: further
// past the limit, relative to it.
func (b RuleBreak) Worse(than RuleBreak) bool {
	a, o := float64(b.Measured), float64(than.Measured)
	switch {
	case math.IsNaN(o):
		return !math.IsNaN(a)
	case math.IsNaN(a):
		return false
	}
	// Compare by how far past the limit, relative to it, where both have one.
	if l1, l2 := float64(b.Limit), float64(than.Limit); l1 > 0 && l2 > 0 {
		a, o = a/l1, o/l2
	}
	if b.Higher {
		return a > o
	}
	return a < o
}

var (
	reWhere  = regexp.MustCompile(`^([^\s/:]+/[^\s/:]+): (.*)$`)
	reLag    = regexp.MustCompile(`^schedule lag p99 (\S+(?: [mµun]?s)?) is not under the (\S+(?: [mµun]?s)?) threshold`)
	reCanary = regexp.MustCompile(`^canary p99 (\S+(?: [mµun]?s)?) exceeds (\S+(?: [mµun]?s)?)`)
	reRate   = regexp.MustCompile(`^achieved rate ([\d.]+)/s.*?target ([\d.]+)/s`)
	reHarn   = regexp.MustCompile(`^\d+ load-generator errors \(([\d.]+)% of \d+, limit ([\d.]+)%\)`)
	reUnsent = regexp.MustCompile(`^(\d+) scheduled requests were never sent`)
	reHealth = regexp.MustCompile(`unhealthy: .*\(success ([\d.e+-]+) %, needs ≥ ([\d.e+-]+) %`)
	// reDuration matches a Go duration as time.Duration.String writes it,
	// optionally with a space before its last unit ("6.41 ms").
	reDuration = regexp.MustCompile(`\b\d+(?:\.\d+)?(?:h|ms|m|s|µs|us|ns)(?:\d+(?:\.\d+)?(?:ms|m|s|µs|us|ns))*\b|\b\d+(?:\.\d+)? (?:ms|µs|ns|s)\b`)
)

// ClassifyReason reads one INVALID reason ("a/baseline: schedule lag p99
// 6.410239ms is not under the 5ms threshold (max 13.71916ms)") as the rule
// it breaks, where, and its numbers. A reason it does not know is RuleOther
// with its text's numbers left out.
func ClassifyReason(reason string) RuleBreak {
	b := RuleBreak{Rule: RuleOther, Measured: Undefined, Limit: Undefined}
	text := reason
	if m := reWhere.FindStringSubmatch(reason); m != nil {
		b.Where, text = []string{m[1]}, m[2]
	}
	ms := func(s string) Num {
		d, err := time.ParseDuration(strings.ReplaceAll(s, " ", ""))
		if err != nil {
			return Undefined
		}
		return Num(Millis(d))
	}
	f := func(s string) Num {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return Undefined
		}
		return Num(v)
	}
	switch {
	case reLag.MatchString(text):
		m := reLag.FindStringSubmatch(text)
		b.Rule, b.Measured, b.Limit, b.Unit, b.Higher = RuleLag, ms(m[1]), ms(m[2]), "ms", true
	case reCanary.MatchString(text):
		m := reCanary.FindStringSubmatch(text)
		b.Rule, b.Measured, b.Limit, b.Unit, b.Higher = RuleCanary, ms(m[1]), ms(m[2]), "ms", true
	case reRate.MatchString(text):
		m := reRate.FindStringSubmatch(text)
		b.Rule, b.Measured, b.Limit, b.Unit = RuleRate, f(m[1]), f(m[2]), "/s"
		b.Higher = b.Measured > b.Limit
	case reHarn.MatchString(text):
		m := reHarn.FindStringSubmatch(text)
		b.Rule, b.Measured, b.Limit, b.Unit, b.Higher = RuleHarness, f(m[1]), f(m[2]), "%", true
	case reUnsent.MatchString(text):
		m := reUnsent.FindStringSubmatch(text)
		b.Rule, b.Measured, b.Limit, b.Higher = RuleUnsent, f(m[1]), 0, true
	case strings.HasPrefix(text, "interrupted after"):
		b.Rule = RuleInterrupted
	case strings.HasPrefix(text, "warm-up too short"):
		b.Rule = RuleStationary
	case reHealth.MatchString(text):
		m := reHealth.FindStringSubmatch(text)
		b.Rule, b.Measured, b.Limit, b.Unit = RuleHealth, f(m[1]), f(m[2]), "%"
	case strings.Contains(text, "unhealthy:"):
		b.Rule = RuleHealth
	}
	return b
}

// RuleBreaks classifies reasons and keeps, per rule, the worst break and
// every place that broke it, in ValidityRules order.
func RuleBreaks(reasons []string) []RuleBreak {
	by := map[string]*RuleBreak{}
	for _, r := range reasons {
		b := ClassifyReason(r)
		cur := by[b.Rule]
		if cur == nil {
			by[b.Rule] = &b
			continue
		}
		where := append(cur.Where, b.Where...)
		if b.Worse(*cur) {
			*cur = b
		}
		cur.Where = where
	}
	out := make([]RuleBreak, 0, len(by))
	for _, b := range by {
		b.Where = dedupe(b.Where)
		out = append(out, *b)
	}
	sort.Slice(out, func(i, j int) bool { return ruleRank(out[i].Rule) < ruleRank(out[j].Rule) })
	return out
}

func ruleRank(rule string) int {
	for i, r := range ValidityRules {
		if r == rule {
			return i
		}
	}
	return len(ValidityRules)
}

func dedupe(v []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range v {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// RoundReason rewrites the durations of a reason to three significant
// digits in a unit a person reads, "6.410239ms" as "6.41 ms", so that a
// reason says only what its numbers can tell.
func RoundReason(reason string) string {
	return reDuration.ReplaceAllStringFunc(reason, func(s string) string {
		d, err := time.ParseDuration(strings.ReplaceAll(s, " ", ""))
		if err != nil {
			return s
		}
		return FmtDuration(d)
	})
}

// RoundReasons is RoundReason of every reason, in a new slice.
func RoundReasons(reasons []string) []string {
	if reasons == nil {
		return nil
	}
	out := make([]string, len(reasons))
	for i, r := range reasons {
		out[i] = RoundReason(r)
	}
	return out
}

// FmtDuration writes d to three significant digits in s, ms, µs or ns:
// "6.41 ms", "1.2 s", "250 ms".
func FmtDuration(d time.Duration) string {
	a := d
	if a < 0 {
		a = -a
	}
	switch {
	case a >= time.Second:
		return FmtHuman(d.Seconds()) + " s"
	case a >= time.Millisecond:
		return FmtHuman(float64(d)/1e6) + " ms"
	case a >= time.Microsecond:
		return FmtHuman(float64(d)/1e3) + " µs"
	}
	return strconv.FormatInt(int64(d), 10) + " ns"
}
