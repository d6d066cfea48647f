package render

import (
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/internal/synth"
	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// TestFiguresEdgeCases renders figures for runs without any success, with
// all-zero latencies (log axes), with no windows of one endpoint and without
// metrics; none may panic.
func TestFiguresEdgeCases(t *testing.T) {
	dir := synth.Write(t, t.TempDir(), "", synth.Matrix(1, func(r *synth.Run) bool { return r.Cond == "slow" }))
	exp, err := rundir.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(r *rundir.Run){
		"no successes": func(r *rundir.Run) {
			for i := range r.Windows {
				r.Windows[i].Counts = rundata.Counts{rundata.ClassTransportError: 10}
				r.Windows[i].LatencyOK = rundata.Quantiles{}
			}
		},
		"all zero": func(r *rundir.Run) {
			for i := range r.Windows {
				r.Windows[i].Latency = rundata.Quantiles{Count: 1}
			}
		},
		"empty windows": func(r *rundir.Run) {
			for i := range r.Windows {
				r.Windows[i].Counts = rundata.Counts{}
			}
		},
		"no metrics, no meta": func(r *rundir.Run) { r.Metrics, r.Meta = nil, rundata.RunMeta{} },
	}
	for name, mutate := range cases {
		r := *exp.Runs[0]
		r.Windows = append([]rundata.Window(nil), r.Windows...)
		mutate(&r)
		e := &rundir.Experiment{Index: exp.Index, Runs: []*rundir.Run{&r}, Expectations: rundata.DefaultExpectations()}
		sum := verdict.Evaluate(e, e.Expectations)
		for _, f := range []figure{runFigure(&measure.Run{Data: &r}, e.Expectations), comparisonFigure(e, e.Expectations, metricP99),
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
