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
