package measure

import (
	"strings"
	"testing"
)

// TestRankedAttribution: every bounded resource that ran out is ranked by
// when it did, exact marks order what one sample cannot, and an inferred
// connections hit after its endpoint's pool ran out is dropped.
func TestRankedAttribution(t *testing.T) {
	for _, tt := range []struct {
		name string
		sc   connScenario
		want string // the ranked labels with their times
	}{
		{"same sample, exact marks: the connections went first", connScenario{poolAt: 3, conns: true, connAt: 3, waitOnlyAt: -1, timeoutsAt: -1, poolSince: 0.7, connSince: 0.6},
			"connections shared 0.6*, pool a 0.7*, queue a 0.75"},
		{"same sample, exact marks: the pool went first", connScenario{poolAt: 3, conns: true, connAt: 3, waitOnlyAt: -1, timeoutsAt: -1, poolSince: 0.55, connSince: 0.6},
			"pool a 0.55*, connections shared 0.6*, queue a 0.75"},
		{"a mark before the fault counts from fault start", connScenario{poolAt: 2, conns: true, connAt: -1, waitOnlyAt: -1, timeoutsAt: -1, poolSince: -1},
			"pool a 0*, queue a 0.5"},
		{"the dependency's capacity ran out before the pool", connScenario{poolAt: 4, connAt: -1, waitOnlyAt: -1, timeoutsAt: -1, capacityAt: 2},
			"dependency capacity A 0.5, pool a 1.00, queue a 1.00"},
		{"inferred connections before the pool: kept", connScenario{poolAt: 6, connAt: -1, waitOnlyAt: -1, timeoutsAt: 2},
			"connections B 0.5, pool a 1.50, queue a 1.50"},
		{"nothing ran out", connScenario{poolAt: -1, connAt: -1, waitOnlyAt: -1, timeoutsAt: -1}, ""},
	} {
		ex := exhaustionScan{tt.sc.run().Data}.exhaustion(nil)
		var got []string
		for _, h := range ex.Ranked {
			got = append(got, h.Label()+" "+h.after())
		}
		if strings.Join(got, ", ") != tt.want {
			t.Errorf("%s: %+v\n got %q\nwant %q", tt.name, tt.sc, strings.Join(got, ", "), tt.want)
		}
		if len(ex.Ranked) > 0 && (ex.Resource != ex.Ranked[0].Resource || ex.AfterFaultS != ex.Ranked[0].AfterFaultS) {
			t.Errorf("%s: first %s after %v, ranked first %+v", tt.name, ex.Resource, ex.AfterFaultS, ex.Ranked[0])
		}
	}
}

// TestRankedDropsExplainedTimeouts: timeouts of A's calls after A's pool ran
// out are explained by the pool, not a sign of a connection limit.
func TestRankedDropsExplainedTimeouts(t *testing.T) {
	r := connScenario{poolAt: 2, connAt: -1, waitOnlyAt: -1, timeoutsAt: 6}.run()
	// Make b's pool the one that ran out: its timeouts then follow it.
	r.Data.Meta.Pools[0].Endpoints = []string{"b"}
	ex := exhaustionScan{r.Data}.exhaustion(nil)
	for _, h := range ex.Ranked {
		if h.Resource == ResourceConnections {
			t.Errorf("inferred connections kept after the pool of its endpoint ran out: %+v", ex.Ranked)
		}
	}
	r.Data.Meta.Pools[0].Endpoints = []string{"a"}
	if ex := (exhaustionScan{r.Data}).exhaustion(nil); len(ex.Ranked) != 3 || ex.Ranked[2].Resource != ResourceConnections {
		t.Errorf("inferred connections of another endpoint's dependency dropped: %+v", ex.Ranked)
	}
}

// TestRankedExternalConnsOnly: a user's service that exports its
// connection pools but no worker pools is ranked on its measured
// connections and the limits inferred from the proxies, not called "not
// observable".
func TestRankedExternalConnsOnly(t *testing.T) {
	r := connScenario{poolAt: -1, conns: true, connAt: 2, waitOnlyAt: -1, timeoutsAt: -1}.run()
	r.Data.Meta.External = true
	for _, s := range r.Data.Metrics {
		for k := range s.Values {
			if strings.HasPrefix(k, "bulkhead_pool_") {
				delete(s.Values, k)
			}
		}
	}
	ex := exhaustionScan{r.Data}.exhaustion([]InferredLimit{{Dependencies: []string{"A"}, Limit: 10, AfterFaultS: 1.25}})
	var got []string
	for _, h := range ex.Ranked {
		got = append(got, h.Label()+" "+h.after())
	}
	if want := "connections shared 0.5, pool (inferred) 1.25"; strings.Join(got, ", ") != want || ex.Resource != ResourceConnections {
		t.Errorf("ranked %q (first %s), want %q", strings.Join(got, ", "), ex.Resource, want)
	}
	r2 := connScenario{poolAt: -1, connAt: -1, waitOnlyAt: -1, timeoutsAt: -1}.run()
	r2.Data.Meta.External, r2.Data.Meta.Pools = true, nil
	for _, s := range r2.Data.Metrics {
		clear(s.Values)
	}
	if ex := (exhaustionScan{r2.Data}).exhaustion(nil); ex.Resource != ResourceNotObservable {
		t.Errorf("no pool or connection metrics: %s, want %s", ex.Resource, ResourceNotObservable)
	}
}
