package measure

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TimingMetrics is the source of a TimeSplit read from the Prometheus
// histograms a user's service exports (external.timing.histograms): per
// phase, each histogram's mean (the increase of its _sum over that of its
// _count) and its p50 and p99 from the increase of its buckets.
const TimingMetrics = "metrics"

// histKey names the series of one histogram in one scope (the value of
// the spec's by label; "" without one).
type histKey struct{ hist, scope string }

// histSeries are one histogram's series in one scope, summed over the
// series of that scope, per sample.
type histSeries struct {
	sum, count []rundir.Point
	buckets    map[float64][]rundir.Point // by upper bound
}

// What a declared histogram was found as in the service's samples, from
// the least to the most use.
const (
	histAbsent    = iota
	histNotHist   // a series of its name, no _count: a gauge or counter
	histUnmatched // histogram series, none with the labels of match
	histFound
)

// histTiming is what the service's histograms say: rows per scope and
// phase, and notes on what could not be read.
type histTiming struct {
	rows  map[string][]TimeSplit // by scope
	notes []string
}

// histTiming reads the declared histograms from the service's samples;
// empty without external.timing.histograms.
func (ts timeSplits) histTiming() histTiming {
	var out histTiming
	h := ts.run.Meta.TimingHistograms
	if h == nil || len(h.Histograms) == 0 {
		return out
	}
	series, found, samples := ts.readHistograms(h)
	scopes := map[string]bool{}
	for k := range series {
		scopes[k.scope] = true
	}
	observed := map[string]bool{}
	out.rows = map[string][]TimeSplit{}
	for _, scope := range slices.Sorted(maps.Keys(scopes)) {
		for _, ph := range ts.timedPhases() {
			span, ok := ts.run.PhaseSpan(ph)
			if !ok {
				continue
			}
			row := TimeSplit{Phase: ph, Source: TimingMetrics, Scope: scopeText(h.By, scope), With: Undefined, Without: Undefined, Bad: Undefined}
			if h.By != "" && slices.Contains(ts.run.Endpoints(), scope) {
				row.Endpoint, row.Scope = scope, ""
			}
			for _, hg := range h.Histograms {
				s, ok := series[histKey{hg.Name, scope}]
				if !ok {
					continue
				}
				p, ok := s.part(hg, span)
				if !ok {
					continue
				}
				observed[hg.Name] = true
				if hg.Role == rundata.TimingWait {
					row.Wait = append(row.Wait, p)
				} else {
					row.Work = append(row.Work, p)
				}
			}
			if len(row.Wait)+len(row.Work) > 0 {
				out.rows[scope] = append(out.rows[scope], row)
			}
		}
	}
	out.notes = histNotes(h, found, observed, samples)
	return out
}

// readHistograms sums the declared histograms' series of the service's
// samples per scope, and says what each histogram was found as and in how
// many samples the service had any metric.
func (ts timeSplits) readHistograms(h *rundata.TimingHistograms) (map[histKey]*histSeries, map[string]int, int) {
	series := map[histKey]*histSeries{}
	found := map[string]int{}
	samples := 0
	type part struct {
		histKey
		kind string
		le   float64
	}
	for _, s := range ts.run.Metrics {
		if s.Component != rundata.ServiceComponent {
			continue
		}
		samples++
		sums := map[part]float64{}
		for k, v := range s.Values {
			name, labels, ok := rundata.ParseKey(k)
			if !ok {
				continue
			}
			hist, kind := histOf(h, name)
			switch {
			case hist == "":
				continue
			case kind == "":
				found[hist] = max(found[hist], histNotHist)
				continue
			case !hasLabels(labels, h.Match):
				found[hist] = max(found[hist], histUnmatched)
				continue
			}
			found[hist] = histFound
			p := part{histKey: histKey{hist, labels[h.By]}, kind: kind}
			if kind == "_bucket" {
				le, err := strconv.ParseFloat(labels["le"], 64)
				if err != nil {
					continue
				}
				p.le = le
			}
			sums[p] += v
		}
		for p, v := range sums {
			hs := series[p.histKey]
			if hs == nil {
				hs = &histSeries{buckets: map[float64][]rundir.Point{}}
				series[p.histKey] = hs
			}
			pt := rundir.Point{Time: s.Time, Value: v}
			switch p.kind {
			case "_sum":
				hs.sum = append(hs.sum, pt)
			case "_count":
				hs.count = append(hs.count, pt)
			default:
				hs.buckets[p.le] = append(hs.buckets[p.le], pt)
			}
		}
	}
	return series, found, samples
}

// histOf is the declared histogram a series name belongs to, and which of
// its series it is (_bucket, _sum, _count); kind is "" for a series of
// the histogram's own name (not a histogram), hist "" for none.
func histOf(h *rundata.TimingHistograms, name string) (hist, kind string) {
	for _, hg := range h.Histograms {
		rest, ok := strings.CutPrefix(name, hg.Name)
		switch {
		case !ok:
		case rest == "":
			return hg.Name, ""
		case rest == "_bucket" || rest == "_sum" || rest == "_count":
			return hg.Name, rest
		}
	}
	return "", ""
}

// hasLabels reports whether labels carry every pair of want.
func hasLabels(labels, want map[string]string) bool {
	for k, v := range want {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// part is the histogram's observations over span; ok is false when it
// counted none there. Without buckets (a summary) it has a mean only.
func (s *histSeries) part(hg rundata.TimingHistogram, span rundata.PhaseSpan) (TimePart, bool) {
	n, ok := rundir.DeltaOver(s.count, span.Start, span.End)
	if !ok || n <= 0 {
		return TimePart{}, false
	}
	ms := rundata.UnitMs(hg.Unit)
	p := TimePart{Name: hg.Name, Count: Num(n), MeanMs: Undefined, P50Ms: Undefined, P99Ms: Undefined}
	if sum, ok := rundir.DeltaOver(s.sum, span.Start, span.End); ok {
		p.MeanMs = Num(ms * sum / n)
	}
	var bs []LeCount
	for le, pts := range s.buckets {
		if d, ok := rundir.DeltaOver(pts, span.Start, span.End); ok {
			bs = append(bs, LeCount{le, d})
		}
	}
	if q := BucketQuantile(0.5, bs); !math.IsNaN(q) {
		p.P50Ms, p.P99Ms = Num(ms*q), Num(ms*BucketQuantile(0.99, bs))
	}
	return p, true
}

// LeCount is one bucket of a classic Prometheus histogram: its upper
// bound and the cumulative count of observations at or below it.
type LeCount struct{ Le, Count float64 }

// BucketQuantile is the q-quantile (0 ≤ q ≤ 1) of the observations in bs
// as Prometheus's histogram_quantile computes it: linear interpolation
// within the bucket the rank falls in (from 0 for the first bucket); the
// highest finite bound when it falls in the +Inf bucket. NaN without a
// +Inf bucket or without observations. bs is sorted in place; counts that
// fall with the bound (a scrape between two series' updates) are raised
// to keep them cumulative.
func BucketQuantile(q float64, bs []LeCount) float64 {
	sort.Slice(bs, func(i, j int) bool { return bs[i].Le < bs[j].Le })
	if len(bs) < 2 || !math.IsInf(bs[len(bs)-1].Le, 1) || math.IsNaN(q) {
		return math.NaN()
	}
	for i := 1; i < len(bs); i++ {
		bs[i].Count = max(bs[i].Count, bs[i-1].Count)
	}
	total := bs[len(bs)-1].Count
	if !(total > 0) {
		return math.NaN()
	}
	rank := min(max(q, 0), 1) * total
	b := sort.Search(len(bs)-1, func(i int) bool { return bs[i].Count >= rank })
	if b == len(bs)-1 {
		return bs[len(bs)-2].Le
	}
	if b == 0 && bs[0].Le <= 0 {
		return bs[0].Le
	}
	start, count := 0.0, bs[b].Count
	if b > 0 {
		start = bs[b-1].Le
		count -= bs[b-1].Count
		rank -= bs[b-1].Count
	}
	if count <= 0 {
		return bs[b].Le
	}
	return min(start+(bs[b].Le-start)*(rank/count), bs[b].Le) // no rounding past the bound
}

// scopeText names a scope in the report: "service" without a by label,
// `pool=orders` with one, `pool=""` for the series without it.
func scopeText(by, scope string) string {
	switch {
	case by == "":
		return "service"
	case scope == "":
		return by + `=""`
	}
	return by + "=" + scope
}

// histNotes say which declared histograms gave no row, and why.
func histNotes(h *rundata.TimingHistograms, found map[string]int, observed map[string]bool, samples int) []string {
	if samples == 0 {
		return []string{"no scrape of the service's metrics (external.metrics.url) succeeded in this run: its histograms could not be read"}
	}
	var out []string
	for _, hg := range h.Histograms {
		what := fmt.Sprintf("`%s` (a %s under external.timing.histograms): ", hg.Name, hg.Role)
		switch found[hg.Name] {
		case histAbsent:
			out = append(out, what+"the service never exported it in the run's scrapes of its metrics: "+
				"check the name (the histogram's, without _bucket) and that the service registers it (a histogram with labels appears once it observes)")
		case histNotHist:
			out = append(out, what+"exported, but not as a histogram (no _count series): a gauge or counter tells no wait or work")
		case histUnmatched:
			out = append(out, what+"exported, but none of its series carries the labels of external.timing.histograms.match "+matchText(h.Match))
		default:
			if !observed[hg.Name] {
				out = append(out, what+"exported, but it counted no observation in any phase after the warmup")
			}
		}
	}
	return out
}

// matchText writes labels as {k="v", …}, sorted.
func matchText(m map[string]string) string {
	var ls []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		ls = append(ls, fmt.Sprintf("%s=%q", k, m[k]))
	}
	return "{" + strings.Join(ls, ", ") + "}"
}
