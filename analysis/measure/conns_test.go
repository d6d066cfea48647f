package measure

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// connScenario is a bulkhead service (pools a and b of 10 permits, queues of
// 10) sampled every 250 ms over a 5 s fault phase, optionally with one
// connection pool of 8 shared by both dependencies. The ...At fields are
// the sample from which something holds (-1: never).
type connScenario struct {
	poolAt     int  // pool a full with a full queue
	conns      bool // the service exports its connection pools
	connAt     int  // the connection pool full, 3 calls waiting, b's calls waiting 41 ms
	waitOnlyAt int  // 7 of 8 connections in use but 2 calls waiting
	timeoutsAt int  // b's dependency timeouts rose, its pool below its limit
	// Exact marks, in seconds after fault start (0: not exported): when
	// pool a's last permit and the connection pool's last slot were taken.
	poolSince, connSince float64
	capacityAt           int // dependency A's stub at its capacity 4 with 2 queued (0: never; -1 too)
}

func (c connScenario) run() *Run {
	fs := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &rundir.Run{Meta: rundata.RunMeta{
		Endpoints: []rundata.EndpointInfo{{Name: "a", Dependency: "A", Pool: "a"}, {Name: "b", Dependency: "B", Pool: "b"}},
		Pools:     []rundata.PoolInfo{{Name: "a", Limit: 10, Queue: 10}, {Name: "b", Limit: 10, Queue: 10}},
		Phases:    []rundata.PhaseSpan{{Name: rundata.PhaseFault, Start: fs, End: fs.Add(5 * time.Second)}},
	}}
	since := func(at, i int) bool { return at >= 0 && i >= at }
	var waitB, timeoutsB, n float64
	for i := range 20 {
		v := map[string]float64{}
		pool := func(name string, inUse, waiting float64) {
			v[rundir.PoolKey(rundata.MetricPoolLimit, name)], v[rundir.PoolKey(rundata.MetricPoolQueueLimit, name)] = 10, 10
			v[rundir.PoolKey(rundata.MetricPoolInUse, name)], v[rundir.PoolKey(rundata.MetricPoolWaiting, name)] = inUse, waiting
		}
		if since(c.poolAt, i) {
			pool("a", 10, 10)
			if c.poolSince != 0 {
				v[rundir.PoolKey(rundata.MetricPoolExhaustedSince, "a")] = float64(fs.UnixNano())/1e9 + c.poolSince
			}
		} else {
			pool("a", 4, 0)
		}
		pool("b", 2, 0)
		if since(c.timeoutsAt, i) {
			timeoutsB += 5
		}
		v[rundata.Key(rundata.MetricDepRequests, rundata.L("dependency", "b"), rundata.L("outcome", "timeout"))] = timeoutsB
		n += 50
		if c.conns {
			inUse, waiting := 5.0, 0.0
			switch {
			case since(c.connAt, i):
				inUse, waiting = 8, 3
				waitB += 50 * 0.041
				if c.connSince > 0 {
					v[rundir.PoolKey(rundata.MetricConnPoolExhaustedSince, "shared")] = float64(fs.UnixNano())/1e9 + c.connSince
				}
			case since(c.waitOnlyAt, i):
				inUse, waiting = 7, 2
			}
			v[rundir.PoolKey(rundata.MetricConnPoolLimit, "shared")] = 8
			v[rundir.PoolKey(rundata.MetricConnPoolInUse, "shared")] = inUse
			v[rundir.PoolKey(rundata.MetricConnPoolWaiting, "shared")] = waiting
			for _, d := range []string{"a", "b"} {
				l := rundata.L("dependency", d)
				v[rundata.Key(rundata.MetricConnWaitCount, l)] = n
				v[rundata.Key(rundata.MetricConnWaitSum, l)] = map[string]float64{"b": waitB}[d]
				v[rundata.Key(rundata.MetricConnWaitTimeouts, l)] = 0
			}
		}
		at := fs.Add(time.Duration(i) * 250 * time.Millisecond)
		r.Metrics = append(r.Metrics, rundata.MetricSample{Time: at, Component: rundata.ServiceComponent, Values: v})
		if c.capacityAt > 0 {
			inService, queued := 2.0, 0.0
			if since(c.capacityAt, i) {
				inService, queued = 4, 2
			}
			r.Metrics = append(r.Metrics, rundata.MetricSample{Time: at, Component: rundata.DepComponent("A"), Values: map[string]float64{
				rundata.MetricStubCapacity: 4, rundata.MetricStubInService: inService, rundata.MetricStubQueueLength: queued}})
		}
	}
	return &Run{Data: r}
}

// TestExhaustionConnections: with connection-pool metrics the connections
// rule is measured (full or waiting) and wins when the connections ran out
// before the worker pool; without them the inference from timeouts stands.
func TestExhaustionConnections(t *testing.T) {
	for _, tt := range []struct {
		name   string
		sc     connScenario
		want   string
		at     float64
		detail string
	}{
		{"connections before the worker pool", connScenario{poolAt: 4, conns: true, connAt: 2, waitOnlyAt: -1, timeoutsAt: -1},
			ResourceConnections, 0.5, "connection pool shared: in_use 8/8, waiting 3; b waited 41 ms on average (50 calls)"},
		{"worker pool before the connections", connScenario{poolAt: 2, conns: true, connAt: 4, waitOnlyAt: -1, timeoutsAt: -1},
			ResourcePool, 0.5, "pool a: in_use 10/10"},
		{"same sample: the listed order (pool first), the connections named too", connScenario{poolAt: 3, conns: true, connAt: 3, waitOnlyAt: -1, timeoutsAt: -1},
			ResourcePool, 0.75, "pool a: in_use 10/10, waiting 10/10, rejections rising: false; in the same sample, connection pool shared: in_use 8/8, waiting 3; b waited 41 ms"},
		{"callers waiting with a slot momentarily free", connScenario{poolAt: 6, conns: true, connAt: -1, waitOnlyAt: 1, timeoutsAt: -1},
			ResourceConnections, 0.25, "connection pool shared: in_use 7/8, waiting 2"},
		{"connections never ran out", connScenario{poolAt: 2, conns: true, connAt: -1, waitOnlyAt: -1, timeoutsAt: -1},
			ResourcePool, 0.5, "pool a"},
		{"no connection metrics: inferred from timeouts, as before", connScenario{poolAt: 6, connAt: -1, waitOnlyAt: -1, timeoutsAt: 2},
			ResourceConnections, 0.5, "dependency B: timeouts rose by 5 while pool b had 2/10 in use"},
		{"connection metrics replace the inference", connScenario{poolAt: 6, conns: true, connAt: -1, waitOnlyAt: -1, timeoutsAt: 2},
			ResourcePool, 1.5, "pool a"},
	} {
		got := exhaustionScan{tt.sc.run().Data}.exhaustion(nil)
		if got.Resource != tt.want || float64(got.AfterFaultS) != tt.at || !strings.HasPrefix(got.Detail, tt.detail) {
			t.Errorf("%s: %+v\n got %s after %v s: %q\nwant %s after %v s: %q…", tt.name, tt.sc, got.Resource, got.AfterFaultS, got.Detail, tt.want, tt.at, tt.detail)
		}
	}
}

// TestExhaustionRulesListConnPoolRule: the measured rule is listed only
// when a run exports connection pools, right after the inferred one.
func TestExhaustionRulesListConnPoolRule(t *testing.T) {
	without := connScenario{poolAt: 2, connAt: -1, waitOnlyAt: -1, timeoutsAt: -1}.run()
	with := connScenario{poolAt: 2, conns: true, connAt: -1, waitOnlyAt: -1, timeoutsAt: -1}.run()
	if got := ExhaustionRulesOf([]*rundir.Run{without.Data}); !slices.Equal(got, ExhaustionRules) {
		t.Errorf("rules without connection metrics changed:\n%q", got)
	}
	got := ExhaustionRulesOf([]*rundir.Run{without.Data, with.Data})
	i := slices.Index(got, ConnPoolRule)
	if len(got) != len(ExhaustionRules)+1 || i < 1 || !strings.HasPrefix(got[i-1], ResourceConnections+":") {
		t.Errorf("rules with connection metrics:\n%q", got)
	}
}
