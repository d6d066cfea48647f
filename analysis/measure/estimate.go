package measure

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"time"
)

// MinRepeatsForCI is the number of repeats from which an Estimate carries a
// bootstrap confidence interval.
const MinRepeatsForCI = 3

// bootstrapResamples and bootstrapSeed make every interval deterministic.
const (
	bootstrapResamples = 2000
	bootstrapSeed      = 20240601
)

// Estimate is a number measured over the repeats of a matrix cell: the mean
// over repeats and, with at least MinRepeatsForCI repeats, a 95 % percentile
// bootstrap interval over repeats. Undefined values (no data) have N = 0 and
// encode as null fields. JSON numbers are written with 6 significant digits
// so that output is deterministic and diff-friendly.
type Estimate struct {
	Mean float64
	Lo   float64 // NaN when there is no interval
	Hi   float64
	N    int
}

// HasCI reports whether the estimate has a confidence interval.
func (e Estimate) HasCI() bool { return e.N >= MinRepeatsForCI && !math.IsNaN(e.Lo) }

// Defined reports whether the estimate has a finite mean.
func (e Estimate) Defined() bool { return e.N > 0 && !math.IsNaN(e.Mean) && !math.IsInf(e.Mean, 0) }

// RelSpread is the CI width over |mean|; 0 without an interval, +Inf for a
// zero mean with a non-zero width.
func (e Estimate) RelSpread() float64 {
	if !e.HasCI() {
		return 0
	}
	w := e.Hi - e.Lo
	if w == 0 {
		return 0
	}
	if e.Mean == 0 {
		return math.Inf(1)
	}
	return w / math.Abs(e.Mean)
}

// MarshalJSON implements json.Marshaler.
func (e Estimate) MarshalJSON() ([]byte, error) {
	m := struct {
		Mean json.RawMessage `json:"mean"`
		Lo   json.RawMessage `json:"ci_lo,omitempty"`
		Hi   json.RawMessage `json:"ci_hi,omitempty"`
		N    int             `json:"n"`
	}{Mean: num(e.Mean), N: e.N}
	if !e.Defined() {
		m.Mean = json.RawMessage("null")
	}
	if e.HasCI() {
		m.Lo, m.Hi = num(e.Lo), num(e.Hi)
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads what MarshalJSON writes: null and a missing
// interval are NaN.
func (e *Estimate) UnmarshalJSON(b []byte) error {
	var raw struct {
		Mean *float64 `json:"mean"`
		Lo   *float64 `json:"ci_lo"`
		Hi   *float64 `json:"ci_hi"`
		N    int      `json:"n"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	val := func(p *float64) float64 {
		if p == nil {
			return math.NaN()
		}
		return *p
	}
	*e = Estimate{Mean: val(raw.Mean), Lo: val(raw.Lo), Hi: val(raw.Hi), N: raw.N}
	return nil
}

// num formats v with 6 significant digits; NaN and ±Inf become null.
func num(v float64) json.RawMessage {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return json.RawMessage("null")
	}
	return json.RawMessage(FmtG(v))
}

// FmtG is the fixed float format of every report: 6 significant digits.
func FmtG(v float64) string {
	if v == 0 {
		return "0"
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// EstimateOf summarises per-repeat values (NaN values are dropped).
func EstimateOf(vals []float64) Estimate {
	v := finite(vals)
	if len(v) == 0 {
		return Estimate{Mean: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	}
	return Bootstrap([][]float64{v}, func(m []float64) float64 { return m[0] })
}

// Bootstrap evaluates f on the group means and, when every group has at
// least MinRepeatsForCI values, a percentile interval of f over resamples of
// each group (independently, with replacement). The RNG is seeded with a
// constant, so the result depends only on the input.
func Bootstrap(groups [][]float64, f func(means []float64) float64) Estimate {
	means := make([]float64, len(groups))
	minN := math.MaxInt
	for i, g := range groups {
		g = finite(g)
		groups[i] = g
		if len(g) == 0 {
			return Estimate{Mean: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
		}
		means[i] = mean(g)
		minN = min(minN, len(g))
	}
	est := Estimate{Mean: f(means), Lo: math.NaN(), Hi: math.NaN(), N: minN}
	if minN < MinRepeatsForCI {
		return est
	}
	rng := rand.New(rand.NewPCG(bootstrapSeed, uint64(len(groups))))
	stats := make([]float64, 0, bootstrapResamples)
	rs := make([]float64, len(groups))
	for range bootstrapResamples {
		for i, g := range groups {
			var s float64
			for range g {
				s += g[rng.IntN(len(g))]
			}
			rs[i] = s / float64(len(g))
		}
		if v := f(rs); !math.IsNaN(v) && !math.IsInf(v, 0) {
			stats = append(stats, v)
		}
	}
	if len(stats) == 0 {
		return est
	}
	sort.Float64s(stats)
	est.Lo = quantile(stats, 0.025)
	est.Hi = quantile(stats, 0.975)
	return est
}

// quantile of sorted s by linear interpolation.
func quantile(s []float64, q float64) float64 {
	if len(s) == 1 {
		return s[0]
	}
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i >= len(s)-1 {
		return s[len(s)-1]
	}
	fr := pos - float64(i)
	return s[i]*(1-fr) + s[i+1]*fr
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func finite(v []float64) []float64 {
	out := make([]float64, 0, len(v))
	for _, x := range v {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out = append(out, x)
		}
	}
	return out
}

func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func Ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}
