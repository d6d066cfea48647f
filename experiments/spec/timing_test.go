package spec

import (
	"reflect"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TestExternalTiming: external.timing is recorded in every run's meta; a
// name that is no metric name, or one listed twice, is an error with the
// file, line and field; it is external's alone (a mode's is unknown).
func TestExternalTiming(t *testing.T) {
	base := strings.Replace(externalSpec, "%s", "ok", 1)
	with := func(timing string) string {
		return strings.Replace(base, "modes: [shared]\n", "  timing:\n"+timing+"modes: [shared]\n", 1)
	}
	s, err := Parse("ext.yaml", []byte(with("    wait: [pool, queue_time]\n    work: [db]\n    ignore: [total]\n")))
	if err != nil {
		t.Fatalf("valid timing: %v", err)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	want := &rundata.TimingRoles{Wait: []string{"pool", "queue_time"}, Work: []string{"db"}, Ignore: []string{"total"}}
	for _, r := range p.Runs {
		if !reflect.DeepEqual(r.Meta.TimingRoles, want) {
			t.Errorf("%s: meta timing roles %+v, want %+v", r.ID, r.Meta.TimingRoles, want)
		}
	}
	if s, err := Parse("ext.yaml", []byte(base)); err != nil {
		t.Fatal(err)
	} else if p, _ := s.Plan(); p.Runs[0].Meta.TimingRoles != nil {
		t.Errorf("no external.timing: meta roles %+v, want none", p.Runs[0].Meta.TimingRoles)
	}
	for _, tt := range []struct{ timing, want string }{
		{"    wait: [pool]\n    work: [db, pool]\n", `ext.yaml:11: external.timing.work[1]: "pool" is also listed under wait`},
		{"    work: [db, db]\n", `ext.yaml:10: external.timing.work[1]: "db" is listed twice`},
		{"    wait: [\"pool wait\"]\n", `ext.yaml:10: external.timing.wait[0]: want a Server-Timing metric name`},
		{"    ignore: [\"\"]\n", `ext.yaml:10: external.timing.ignore[0]: want a Server-Timing metric name`},
		{"    wait: [" + strings.Repeat("w", rundata.MaxTimingText+1) + "]\n", `external.timing.wait[0]: want a Server-Timing metric name`},
		{"    other: [x]\n", `ext.yaml:10: external.timing.other`},
	} {
		_, err := Parse("ext.yaml", []byte(with(tt.timing)))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("timing\n%s: error %v, want it to contain %q", tt.timing, err, tt.want)
		}
	}
	mode := strings.Replace(base, "modes: [shared]\n", "modes: [{name: shared, external: {timing: {wait: [pool]}}}]\n", 1)
	if _, err := Parse("ext.yaml", []byte(mode)); err == nil || !strings.Contains(err.Error(), "modes[0].external.timing") {
		t.Errorf("a mode's timing: error %v, want modes[0].external.timing unknown", err)
	}
}

// TestExternalTimingHistograms: external.timing.histograms is recorded in
// every run's meta with each histogram's role and unit (from its name, or
// unit), its names reach the sampler's metric map, and metrics.url alone
// is then metrics enough; a bad name, unit, label or a mode without a
// metrics URL is an error with the file, line and field.
func TestExternalTimingHistograms(t *testing.T) {
	base := strings.Replace(externalSpec, "%s", "ok", 1)
	with := func(metrics, hist string) string {
		return strings.Replace(base, "modes: [shared]\n", metrics+"  timing:\n    histograms:\n"+hist+"modes: [shared]\n", 1)
	}
	const url = "  metrics: {url: \"http://127.0.0.1:8080/metrics\"}\n"
	s, err := Parse("ext.yaml", []byte(with(url, "      wait: [pg_pool_acquire_seconds]\n      work: [query_ms]\n      by: pool\n      match: {db: main}\n")))
	if err != nil {
		t.Fatalf("valid histograms: %v", err)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	want := &rundata.TimingHistograms{By: "pool", Match: map[string]string{"db": "main"}, Histograms: []rundata.TimingHistogram{
		{Name: "pg_pool_acquire_seconds", Role: rundata.TimingWait, Unit: rundata.UnitSeconds},
		{Name: "query_ms", Role: rundata.TimingWork, Unit: rundata.UnitMilliseconds}}}
	for _, r := range p.Runs {
		if !reflect.DeepEqual(r.Meta.TimingHistograms, want) {
			t.Errorf("%s: meta histograms %+v, want %+v", r.ID, r.Meta.TimingHistograms, want)
		}
		if m := r.ServiceMetrics; m == nil || !reflect.DeepEqual(m.Map.Histograms, []string{"pg_pool_acquire_seconds", "query_ms"}) {
			t.Errorf("%s: service metrics %+v, want the histograms' names kept", r.ID, m)
		}
	}
	if s, err := Parse("ext.yaml", []byte(with(url, "      work: [db_time]\n      unit: us\n"))); err != nil {
		t.Errorf("unit given: %v", err)
	} else if p, _ := s.Plan(); p.Runs[0].Meta.TimingHistograms.Histograms[0].Unit != rundata.UnitMicroseconds {
		t.Errorf("unit given: meta %+v, want us", p.Runs[0].Meta.TimingHistograms)
	}
	for _, tt := range []struct{ metrics, hist, want string }{
		{url, "      wait: [pg_pool_acquire_seconds_bucket]\n", `ext.yaml:12: external.timing.histograms.wait[0]: name the histogram, not its series: "pg_pool_acquire_seconds"`},
		{url, "      wait: [\"pool wait\"]\n", `ext.yaml:12: external.timing.histograms.wait[0]: want a Prometheus metric name`},
		{url, "      work: [db_time]\n", `ext.yaml:12: external.timing.histograms.work[0]: "db_time" does not say its unit`},
		{url, "      work: [db_seconds]\n      unit: minutes\n", `ext.yaml:13: external.timing.histograms.unit: want s, ms, us or ns`},
		{url, "      wait: [a_seconds]\n      work: [a_seconds]\n", `ext.yaml:13: external.timing.histograms.work[0]: "a_seconds" is also listed under wait`},
		{url, "      wait: [a_seconds, a_seconds]\n", `"a_seconds" is listed twice`},
		{url, "      wait: [a_seconds]\n      by: le\n", `ext.yaml:13: external.timing.histograms.by: want a label name`},
		{url, "      wait: [a_seconds]\n      match: {\"a-b\": x}\n", `ext.yaml:13: external.timing.histograms.match.a-b: want a label name`},
		{url, "      by: pool\n", `ext.yaml:11: external.timing.histograms: name at least one histogram`},
		{"", "      wait: [a_seconds]\n", `external.timing.histograms: mode shared has no external.metrics.url`},
	} {
		_, err := Parse("ext.yaml", []byte(with(tt.metrics, tt.hist)))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("histograms\n%s: error %v, want it to contain %q", tt.hist, err, tt.want)
		}
	}
}
