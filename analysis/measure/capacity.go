package measure

import (
	"fmt"
	"strings"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// capacitySeries are the metric names of one kind of finite capacity: a
// stub's own (DepComponent) or a proxy's capacity fault (ProxyComponent).
type capacitySeries struct {
	prefix                     string // component name prefix
	what                       string // how the detail names it
	capacity, inService, queue string
}

var capacityKinds = []capacitySeries{
	{"dep-", "stub", rundata.MetricStubCapacity, rundata.MetricStubInService, rundata.MetricStubQueueLength},
	{"proxy-", "capacity fault", rundata.MetricProxyCapacity, rundata.MetricProxyInService, rundata.MetricProxyQueueLength},
}

// capacityHits applies the dependency-capacity rule: for every dependency
// with finite capacity, the first sample in [from, to] at which it served
// at its capacity with requests queued behind it.
func (es exhaustionScan) capacityHits(from, to time.Time) []hit {
	var hits []hit
	for _, comp := range components(es.run) {
		for _, k := range capacityKinds {
			dep, ok := strings.CutPrefix(comp, k.prefix)
			if !ok {
				continue
			}
			capacity := es.run.Metric(comp, k.capacity)
			queue := es.run.Metric(comp, k.queue)
			for _, p := range es.run.Metric(comp, k.inService) {
				c, _ := rundir.ValueAt(capacity, p.Time)
				q, _ := rundir.ValueAt(queue, p.Time)
				if inRange(p.Time, from, to) && c > 0 && p.Value >= c && q > 0 {
					hits = append(hits, hit{ResourceCapacity, p.Time, fmt.Sprintf("dependency %s (%s): %s/%s in service, %s queued",
						dep, k.what, FmtG(p.Value), FmtG(c), FmtG(q)), dep, false, ""})
					break
				}
			}
		}
	}
	return hits
}
