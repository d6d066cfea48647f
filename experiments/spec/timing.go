package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/loadgen"
)

// timingPart is a spec as its timing family sees it: external.timing, the
// Server-Timing metrics.
type timingPart struct{ *Spec }

// ExternalTiming declares the role of the Server-Timing metrics a user's
// service sends (external.timing): which are time spent waiting (for a
// pool's connection, in a queue), which work (a query, a call), and which
// the report leaves out (a metric of the whole request, wait and work
// together). A metric not listed takes rundata.DefaultTimingRole: a wait
// when its name or description contains wait, queue, acquire or pool,
// left out when it is named total, work otherwise. Histograms, if set,
// names Prometheus histograms the service exports as waits or work.
type ExternalTiming struct {
	Wait       []string          `yaml:"wait,omitempty"`
	Work       []string          `yaml:"work,omitempty"`
	Ignore     []string          `yaml:"ignore,omitempty"`
	Histograms *TimingHistograms `yaml:"histograms,omitempty"`
}

// TimingHistograms names Prometheus histograms (classic: _bucket, _sum and
// _count series) that the user's service exports at external.metrics.url,
// each a wait (a pool's acquire time) or work (a query's time), by family
// name without _bucket. Unit (s, ms, us or ns), if set, is the unit of them
// all; else each is in the unit its name ends with (_seconds,
// _milliseconds or _ms, _microseconds or _us, _nanoseconds or _ns). By, if set, is a label whose values split the series
// into rows (one per pool or dependency); Match keeps only the series that
// carry all its labels.
type TimingHistograms struct {
	Wait  []string          `yaml:"wait,omitempty"`
	Work  []string          `yaml:"work,omitempty"`
	Unit  string            `yaml:"unit,omitempty"`
	By    string            `yaml:"by,omitempty"`
	Match map[string]string `yaml:"match,omitempty"`
}

// validateTiming checks external.timing: every name a Server-Timing metric
// name, each in one list once, and the histograms.
func (s timingPart) validateTiming(p *problems) {
	t := s.External.Timing
	if t == nil {
		return
	}
	checkRoles(p, "external.timing", "a metric", []roleNames{{rundata.TimingWait, t.Wait}, {rundata.TimingWork, t.Work}, {rundata.TimingIgnore, t.Ignore}},
		func(n string) string {
			if !loadgen.ValidTimingName(n) {
				return fmt.Sprintf("want a Server-Timing metric name (a token such as db or pool_wait, at most %d bytes, as your service sends it), got %q", rundata.MaxTimingText, n)
			}
			return ""
		})
	s.validateTimingHistograms(p, t.Histograms)
}

// validateTimingHistograms checks external.timing.histograms: metric
// family names whose unit is known, each listed once, label names for by
// and match, and a metrics URL to scrape them from in every mode.
func (s timingPart) validateTimingHistograms(p *problems, h *TimingHistograms) {
	const at = "external.timing.histograms"
	if h == nil {
		return
	}
	if len(h.Wait)+len(h.Work) == 0 {
		p.add(at, "name at least one histogram under wait or work, e.g. {wait: [pg_pool_acquire_seconds], work: [pg_query_seconds]}")
	}
	if h.Unit != "" && rundata.UnitMs(h.Unit) == 0 {
		p.add(at+".unit", "want s, ms, us or ns, got %q", h.Unit)
	}
	checkRoles(p, at, "a histogram", []roleNames{{rundata.TimingWait, h.Wait}, {rundata.TimingWork, h.Work}}, func(n string) string {
		switch {
		case !model.IsValidLegacyMetricName(n):
			return fmt.Sprintf("want a Prometheus metric name such as pg_pool_acquire_seconds, got %q", n)
		case histSeries(n) != "":
			return fmt.Sprintf("name the histogram, not its series: %q, not %q", strings.TrimSuffix(n, histSeries(n)), n)
		case rundata.UnitOfName(n) == "" && h.Unit == "":
			return fmt.Sprintf("%q does not say its unit (_seconds, _milliseconds, _microseconds, _nanoseconds): give unit (s, ms, us or ns)", n)
		}
		return ""
	})
	if h.By != "" && (!model.LabelName(h.By).IsValidLegacy() || h.By == model.BucketLabel) {
		p.add(at+".by", "want a label name of the histograms' series (such as pool), not le, got %q", h.By)
	}
	for _, k := range sortedKeys(h.Match) {
		if !model.LabelName(k).IsValidLegacy() || k == model.BucketLabel || k == h.By {
			p.add(at+".match."+k, "want a label name of the histograms' series, not le nor by's label")
		}
	}
	for i := range s.Modes {
		if es := s.ExternalOf(&s.Modes[i]); es.Metrics == nil {
			p.add(at, "mode %s has no external.metrics.url to scrape the histograms from", s.Modes[i].Name)
			break
		}
	}
}

// roleNames are the names a spec lists under one role.
type roleNames struct {
	role  string
	names []string
}

// checkRoles checks the names listed under each role at path.<role>[i]:
// each one that bad finds fault with (its message; "" for none) is a
// problem, and so is a name listed twice or under two roles (what is "a
// metric", "a histogram").
func checkRoles(p *problems, at, what string, lists []roleNames, bad func(string) string) {
	seen := map[string]string{}
	for _, l := range lists {
		for i, n := range l.names {
			path := fmt.Sprintf("%s.%s[%d]", at, l.role, i)
			switch msg := bad(n); {
			case msg != "":
				p.add(path, "%s", msg)
			case seen[n] == l.role:
				p.add(path, "%q is listed twice", n)
			case seen[n] != "":
				p.add(path, "%q is also listed under %s: %s has one role", n, seen[n], what)
			default:
				seen[n] = l.role
			}
		}
	}
}

// histSeries is the series suffix a histogram's family name must not end
// with (_bucket, _sum, _count), or "".
func histSeries(name string) string {
	for _, s := range []string{"_bucket", "_sum", "_count"} {
		if strings.HasSuffix(name, s) {
			return s
		}
	}
	return ""
}

// roles are the declared roles as the run records them; nil without
// external.timing.
func (t *ExternalTiming) roles() *rundata.TimingRoles {
	if t == nil {
		return nil
	}
	return &rundata.TimingRoles{Wait: t.Wait, Work: t.Work, Ignore: t.Ignore}
}

// histograms are the declared histograms as the run records them; nil
// without external.timing.histograms.
func (t *ExternalTiming) histograms() *rundata.TimingHistograms {
	if t == nil || t.Histograms == nil {
		return nil
	}
	h := t.Histograms
	out := &rundata.TimingHistograms{By: h.By, Match: h.Match}
	for _, l := range []roleNames{{rundata.TimingWait, h.Wait}, {rundata.TimingWork, h.Work}} {
		for _, n := range l.names {
			unit := rundata.UnitOfName(n)
			if h.Unit != "" {
				unit = h.Unit
			}
			out.Histograms = append(out.Histograms, rundata.TimingHistogram{Name: n, Role: l.role, Unit: unit})
		}
	}
	return out
}

// histogramNames are the family names of the declared histograms.
func (t *ExternalTiming) histogramNames() []string {
	if t == nil || t.Histograms == nil {
		return nil
	}
	return slices.Concat(t.Histograms.Wait, t.Histograms.Work)
}
