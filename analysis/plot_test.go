package analysis

import (
	"testing"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// TestFiguresEdgeCases renders figures for runs without any success, with
// all-zero latencies (log axes), with no windows of one endpoint and without
// metrics; none may panic.
func TestFiguresEdgeCases(t *testing.T) {
	dir := writeSynth(t, t.TempDir(), "", matrix(1, func(r *synthRun) bool { return r.cond == "slow" }))
	exp, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(r *Run){
		"no successes": func(r *Run) {
			for i := range r.Windows {
				r.Windows[i].Counts = rundata.Counts{rundata.ClassTransportError: 10}
				r.Windows[i].LatencyOK = rundata.Quantiles{}
			}
		},
		"all zero": func(r *Run) {
			for i := range r.Windows {
				r.Windows[i].Latency = rundata.Quantiles{Count: 1}
			}
		},
		"empty windows": func(r *Run) {
			for i := range r.Windows {
				r.Windows[i].Counts = rundata.Counts{}
			}
		},
		"no metrics, no meta": func(r *Run) { r.Metrics, r.Meta = nil, rundata.RunMeta{} },
	}
	for name, mutate := range cases {
		r := *exp.Runs[0]
		r.Windows = append([]rundata.Window(nil), r.Windows...)
		mutate(&r)
		e := &Experiment{Index: exp.Index, Runs: []*Run{&r}, Expectations: rundata.DefaultExpectations()}
		sum := Evaluate(e, e.Expectations)
		for _, f := range []figure{runFigure(&r, e.Expectations), comparisonFigure(e, e.Expectations, metricP99),
			comparisonFigure(e, e.Expectations, metricSuccess), summaryFigure(&sum)} {
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("%s: figure panicked: %v", name, p)
					}
				}()
				w, h := f.size()
				// A low DPI keeps the same layout with fewer pixels to fill.
				f.draw(draw.New(vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(16))))
			}()
		}
	}
}
