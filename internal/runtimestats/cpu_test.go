package runtimestats

import (
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

var sink [][]byte

// TestCPUSeesGC: allocating garbage and forcing collections raises the
// runtime's GC CPU time; the GC share of the used CPU stays a share; the
// counters are exported under their names.
func TestCPUSeesGC(t *testing.T) {
	before := ReadCPU()
	for range 20 {
		for range 2000 {
			sink = append(sink, make([]byte, 1024))
		}
		sink = nil
		runtime.GC()
	}
	after := ReadCPU()
	gc, used := after.GC-before.GC, (after.Total-after.Idle)-(before.Total-before.Idle)
	if gc <= 0 || after.Total <= before.Total || used <= 0 || gc > used*1.01 {
		t.Errorf("runtime CPU accounting: gc %v s of %v s used (total %v → %v); want gc > 0 and ≤ used", gc, used, before.Total, after.Total)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector())
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range fams {
		_, _ = expfmt.MetricFamilyToText(&b, f)
	}
	for _, name := range []string{CPUGC, CPUIdle, CPUTotal} {
		if !strings.Contains(b.String(), "# TYPE "+name+" counter\n") {
			t.Errorf("/metrics lacks counter %s", name)
		}
	}
}
