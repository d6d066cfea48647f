package tcpproxy

import (
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func counterValue(t testing.TB, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

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

func TestMetricsCountConnectionsBytesAndFaults(t *testing.T) {
	checkFDs(t)
	e := newEnv(t, echo, Fault{Type: TypeLatency, Percent: 100, Stream: StreamUpstream, Latency: 1})
	a, b := e.dial(t), e.dial(t)
	exchange(t, a, []byte("12345"))
	exchange(t, b, []byte("678"))
	for _, name := range []string{"faultproxy_tcp_open_connections", "faultproxy_inflight_requests"} {
		if got := gather(t, e.p, name, "", ""); got != 2 {
			t.Errorf("%s = %v with two connections open, want 2", name, got)
		}
	}
	if got := gather(t, e.p, "faultproxy_inflight_peak", "", ""); got != 2 {
		t.Errorf("faultproxy_inflight_peak = %v, want 2", got)
	}
	if got := gather(t, e.p, "faultproxy_tcp_bytes_total", "stream", "upstream"); got != 8 {
		t.Errorf("upstream bytes %v, want 8", got)
	}
	if got := gather(t, e.p, "faultproxy_faults_injected_total", "type", "latency"); got != 2 {
		t.Errorf("latency injected %v times, want 2 (once per connection)", got)
	}
	a.Close()
	b.Close()
	testkit.WaitFor(t, 5*time.Second, "the connections to end", func() bool { return e.p.Open() == 0 })
	if got := gather(t, e.p, "faultproxy_tcp_connection_duration_seconds", "", ""); got != 2 {
		t.Errorf("duration histogram has %v samples, want 2", got)
	}
	if got := gather(t, e.p, "faultproxy_tcp_closed_total", "outcome", "closed"); got != 2 {
		t.Errorf("closed outcomes %v, want 2", got)
	}
}
