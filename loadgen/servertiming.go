package loadgen

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TimingEntry is one metric of a Server-Timing header that has a dur.
type TimingEntry struct {
	Name string
	// Desc is its desc parameter ("" without one), cut to
	// rundata.MaxTimingText bytes.
	Desc string
	// Dur is its dur parameter (milliseconds in the header), at most
	// MaxTimingDur.
	Dur time.Duration
}

// MaxTimingDur is the longest dur a Server-Timing entry is recorded with;
// a longer one counts as MaxTimingDur (no request of a run takes longer).
const MaxTimingDur = time.Duration(histHighest)

// ParseServerTiming reads the values of a response's Server-Timing headers
// (each a comma-separated list of metrics, as the W3C Server Timing
// specification defines it:
//
//	metric = token *( OWS ";" OWS param )
//	param  = token OWS "=" OWS ( token / quoted-string )
//
// ) and returns the metrics that have a dur, in order: at most
// rundata.MaxTimingEntries, the rest counted in dropped. Parameter names
// are case-insensitive and only the first dur and desc of a metric count;
// a metric without dur (a flag such as `miss`) is skipped. A malformed
// metric (no token for a name or a parameter, a name longer than
// rundata.MaxTimingText, an unterminated quoted string, anything but ";" or
// "," after a parameter, a dur that is no finite number ≥ 0) is skipped and
// counted in bad; the rest of its header is still read. It never fails and
// never panics, and takes time linear in the values' length.
func ParseServerTiming(values []string) (entries []TimingEntry, bad, dropped int) {
	for _, v := range values {
		p := timingParser{s: v}
		for {
			e, ok, more := p.metric()
			if !more {
				break
			}
			switch {
			case !ok:
				bad++
			case e.Name == "":
				// a metric without dur: not a time
			case len(entries) >= rundata.MaxTimingEntries:
				dropped++
			default:
				entries = append(entries, e)
			}
		}
	}
	return entries, bad, dropped
}

// timingParser reads one header value.
type timingParser struct {
	s string
	i int
}

// metric reads the next metric of the list. more is false at the end of
// the value; ok is false for a malformed metric; e.Name is "" for a
// well-formed metric without dur.
func (p *timingParser) metric() (e TimingEntry, ok, more bool) {
	for {
		p.ows()
		if p.i >= len(p.s) {
			return TimingEntry{}, false, false
		}
		if p.s[p.i] != ',' {
			break
		}
		p.i++ // an empty element of the list
	}
	ok = p.metricBody(&e)
	p.skipElement()
	if !ok {
		return TimingEntry{}, false, true
	}
	return e, true, true
}

// metricBody reads a metric up to the end of its last parameter into e
// (leaving e.Name empty when it has no dur) and reports whether it is
// well-formed.
func (p *timingParser) metricBody(e *TimingEntry) bool {
	name := p.token()
	if name == "" || len(name) > rundata.MaxTimingText {
		return false
	}
	var durSet, descSet bool
	var dur float64
	for {
		p.ows()
		if p.i >= len(p.s) || p.s[p.i] == ',' {
			break
		}
		if p.s[p.i] != ';' {
			return false
		}
		p.i++
		p.ows()
		param := p.token()
		if param == "" {
			return false
		}
		p.ows()
		val := ""
		if p.i < len(p.s) && p.s[p.i] == '=' {
			p.i++
			p.ows()
			var ok bool
			if val, ok = p.value(); !ok {
				return false
			}
		}
		switch {
		case strings.EqualFold(param, "dur") && !durSet:
			durSet = true
			f, err := strconv.ParseFloat(val, 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
				return false
			}
			dur = f
		case strings.EqualFold(param, "desc") && !descSet:
			descSet = true
			e.Desc = cutText(val, rundata.MaxTimingText)
		}
	}
	if durSet {
		e.Name = name
		e.Dur = time.Duration(min(dur*float64(time.Millisecond), float64(MaxTimingDur)))
	}
	return true
}

// value reads a parameter's value: a quoted string (unescaped) or a token
// (possibly empty). ok is false for an unterminated quoted string.
func (p *timingParser) value() (string, bool) {
	if p.i >= len(p.s) || p.s[p.i] != '"' {
		return p.token(), true
	}
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '"':
			return b.String(), true
		case c == '\\' && p.i < len(p.s):
			c = p.s[p.i]
			p.i++
		}
		if b.Len() <= rundata.MaxTimingText*utf8.UTFMax {
			b.WriteByte(c)
		}
	}
	return "", false
}

// skipElement moves past the rest of the current list element: up to and
// including the next comma outside a quoted string, or to the end.
func (p *timingParser) skipElement() {
	quoted := false
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch {
		case quoted && c == '\\':
			p.i++
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			return
		}
	}
}

// token reads a token (possibly empty).
func (p *timingParser) token() string {
	start := p.i
	for p.i < len(p.s) && isTChar(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

// ows skips optional white space.
func (p *timingParser) ows() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// isTChar reports whether c may be part of a token (RFC 9110 tchar).
func isTChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// cutText replaces any invalid UTF-8 in s, so that it can be written as
// JSON as it is, and cuts it to at most n bytes at a rune boundary.
func cutText(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > n {
		i := n
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		s = s[:i]
	}
	return s
}

// parseTiming is ParseServerTiming with its counts saturated to a sample's
// fields.
func parseTiming(values []string) ([]TimingEntry, uint32, uint32) {
	es, bad, dropped := ParseServerTiming(values)
	return es, uint32(min(bad, math.MaxUint32)), uint32(min(dropped, math.MaxUint32))
}

// timingAgg accumulates the Server-Timing headers of one endpoint × phase:
// at most rundata.MaxTimingMetrics histograms, made when a name first
// comes.
type timingAgg struct {
	with, without, bad, dropped int64
	metrics                     []*timingMetric
}

type timingMetric struct {
	name, desc string
	h          *hist
}

// add counts s, a result of the phase.
func (t *timingAgg) add(s *sample) {
	if !s.stSeen {
		t.without++
		return
	}
	t.with++
	t.bad += int64(s.stBad)
	t.dropped += int64(s.stDropped)
	for _, e := range s.timing {
		if m := t.metric(e); m != nil {
			m.h.record(int64(e.Dur))
		} else {
			t.dropped++
		}
	}
}

// metric returns e's metric, made if there is room (nil if not).
func (t *timingAgg) metric(e TimingEntry) *timingMetric {
	for _, m := range t.metrics {
		if m.name == e.Name {
			if m.desc == "" && e.Desc != "" {
				m.desc = strings.Clone(e.Desc)
			}
			return m
		}
	}
	if len(t.metrics) >= rundata.MaxTimingMetrics {
		return nil
	}
	// Clone: the entry's strings share the memory of its whole header.
	m := &timingMetric{name: strings.Clone(e.Name), desc: strings.Clone(e.Desc), h: newTimingHist()}
	t.metrics = append(t.metrics, m)
	return m
}

// record is the phase's record; nil when no result carried the header.
func (t *timingAgg) record() *rundata.ServerTiming {
	if t.with == 0 {
		return nil
	}
	st := &rundata.ServerTiming{With: t.with, Without: t.without, Bad: t.bad, Dropped: t.dropped}
	for _, m := range t.metrics {
		st.Metrics = append(st.Metrics, rundata.TimingMetric{Name: m.name, Desc: m.desc, Dur: m.h.quantiles()})
	}
	slices.SortFunc(st.Metrics, func(a, b rundata.TimingMetric) int { return strings.Compare(a.Name, b.Name) })
	return st
}

// ValidTimingName reports whether name can be a Server-Timing metric's
// name as ParseServerTiming reads it: a token of at most
// rundata.MaxTimingText bytes.
func ValidTimingName(name string) bool {
	p := timingParser{s: name}
	return name != "" && len(name) <= rundata.MaxTimingText && p.token() == name
}
