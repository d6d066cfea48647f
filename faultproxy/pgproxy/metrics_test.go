package pgproxy

import (
	"testing"
)

// gather returns the value of the series name{label=value} (label may be
// empty), or of a histogram's count.
func gather(t testing.TB, p *Proxy, name, label, value string) float64 {
	t.Helper()
	mfs, err := p.m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := label == ""
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					match = true
				}
			}
			if !match {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	t.Fatalf("no series %s{%s=%q}", name, label, value)
	return 0
}
