package render

import (
	"fmt"
	"image/color"
	"math"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// poolPanel plots, per pool, permits in use (solid), callers waiting
// (dotted), the limit (thin) and the Little's-law predicted demand per phase
// (dashed steps).
func poolPanel(p *plot.Plot, leg *plot.Legend, r *measure.Run, origin time.Time, ex rundata.Expectations) {
	var all [][]float64
	pools := r.Data.PoolNames()
	for _, pool := range pools {
		c := nameColor(pool, ex)
		all = append(all, occupancySeries(p, leg, r, origin, "pool "+pool, pool, c, 0,
			rundata.MetricPoolInUse, rundata.MetricPoolWaiting, rundata.MetricPoolLimit)...)
		xs, ys := demandSteps(r, pool, origin)
		if len(xs) > 0 {
			addSeries(p, leg, "pool "+pool+" predicted demand", xs, ys, lineStyle(c, 1, 1.5), false)
			all = append(all, ys)
		}
	}
	all = append(all, connPoolSeries(p, leg, r, origin, ex)...)
	if len(pools) == 0 {
		leg.Add("no pool metrics")
	}
	_, hi, ok := yRange(false, all...)
	p.Y.Min = 0
	if !ok || hi <= 0 {
		hi = 1
	}
	p.Y.Max = hi * 1.1
	p.Legend.Padding = vg.Points(1)
}

// connPoolSeries plots, per connection pool that came near its limit (half
// of it in use, or calls waiting), connections in use (dash-dot), calls
// waiting for one (dotted) and its limit (thin dash-dot), and returns their
// values; a pool that never did is only named in the legend, so that a
// roomy pool's limit does not flatten the worker pools.
func connPoolSeries(p *plot.Plot, leg *plot.Legend, r *measure.Run, origin time.Time, ex rundata.Expectations) [][]float64 {
	var all [][]float64
	for _, pool := range r.ConnPoolNames() {
		if peak, limit, near := r.ConnPoolNear(pool); !near {
			leg.Add(fmt.Sprintf("conns %s: peak %s of %s (not drawn)", pool, measure.FmtG(peak), measure.FmtG(limit)))
			continue
		}
		all = append(all, occupancySeries(p, leg, r, origin, "conns "+pool, pool, nameColor(pool, ex), 3,
			rundata.MetricConnPoolInUse, rundata.MetricConnPoolWaiting, rundata.MetricConnPoolLimit)...)
	}
	return all
}

// occupancySeries plots one pool's in-use (thick, dash pattern dash),
// waiting (dotted) and limit (thin, dash) series, labelled "<label> in
// use" etc., and returns their values.
func occupancySeries(p *plot.Plot, leg *plot.Legend, r *measure.Run, origin time.Time, label, pool string, c color.Color, dash int, inUse, waiting, limit string) [][]float64 {
	var all [][]float64
	for _, m := range []struct {
		metric, label string
		sty           draw.LineStyle
	}{
		{inUse, "in use", lineStyle(c, dash, 2)},
		{waiting, "waiting", lineStyle(c, 4, 1.5)},
		{limit, "limit", lineStyle(c, dash, 0.7)},
	} {
		xs, ys := metricXY(r.Data.Metric(rundata.ServiceComponent, rundir.PoolKey(m.metric, pool)), origin)
		if len(xs) == 0 {
			continue
		}
		addSeries(p, leg, label+" "+m.label, xs, ys, m.sty, false)
		all = append(all, ys)
	}
	return all
}

func metricXY(s []rundir.Point, origin time.Time) (xs, ys []float64) {
	for _, pt := range s {
		xs = append(xs, pt.Time.Sub(origin).Seconds())
		ys = append(ys, pt.Value)
	}
	return xs, ys
}

// demandSteps draws PoolInfo.PredictedDemand as a step per phase span, with
// a NaN between phases that have no prediction.
func demandSteps(r *measure.Run, pool string, origin time.Time) (xs, ys []float64) {
	info := r.Data.PoolInfo(pool)
	for _, ph := range r.Data.Meta.Phases {
		d, ok := info.PredictedDemand[ph.Name]
		if !ok {
			xs, ys = append(xs, ph.Start.Sub(origin).Seconds()), append(ys, math.NaN())
			continue
		}
		xs = append(xs, ph.Start.Sub(origin).Seconds(), ph.End.Sub(origin).Seconds())
		ys = append(ys, d, d)
	}
	return xs, ys
}
