package service

import (
	"testing"
	"time"
)

func TestLayouts(t *testing.T) {
	tests := []struct {
		cfg        LayoutConfig
		pools      []string
		sizes      []int // per pool, in order
		queues     []int
		sameForA_B bool // /a and /b draw from one pool
	}{
		{LayoutConfig{Mode: ModeShared, PoolSize: 20, Queue: 20, MaxWait: time.Second}, []string{"shared"}, []int{20}, []int{20}, true},
		{LayoutConfig{Mode: ModeBulkhead, PoolSize: 20, Queue: 20, MaxWait: time.Second}, []string{"a", "b"}, []int{10, 10}, []int{10, 10}, false},
		{LayoutConfig{Mode: ModeBulkhead, PoolSize: 5, Queue: 3, MaxWait: time.Second}, []string{"a", "b"}, []int{3, 2}, []int{2, 1}, false},
		{LayoutConfig{Mode: ModeBulkhead, PoolSize: 0, PoolSizes: map[string]int{"a": 15, "b": 3},
			Queues: map[string]int{"a": 0, "b": 7}, MaxWait: time.Second}, []string{"a", "b"}, []int{15, 3}, []int{0, 7}, false},
		{LayoutConfig{Mode: ModeBulkhead, PoolSize: 20, Queue: 20, MaxWait: time.Second, BrokenSharedBulkhead: true},
			[]string{"a", "b"}, []int{20, 10}, []int{20, 10}, true},
	}
	for _, tt := range tests {
		l, err := NewLayout(tt.cfg, []string{EndpointA, EndpointB})
		if err != nil {
			t.Errorf("NewLayout(%+v): %v", tt.cfg, err)
			continue
		}
		pools := l.Pools()
		if len(pools) != len(tt.pools) {
			t.Errorf("NewLayout(%+v): %d pools, want %v", tt.cfg, len(pools), tt.pools)
			continue
		}
		for i, p := range pools {
			c := p.Config()
			if p.Name() != tt.pools[i] || c.Size != tt.sizes[i] || c.Queue != tt.queues[i] {
				t.Errorf("NewLayout(%+v): pool %d = %s %+v, want %s size %d queue %d",
					tt.cfg, i, p.Name(), c, tt.pools[i], tt.sizes[i], tt.queues[i])
			}
		}
		if same := l.Pool(EndpointA) == l.Pool(EndpointB); same != tt.sameForA_B || l.Mode() != tt.cfg.Mode {
			t.Errorf("NewLayout(%+v): a and b share a pool = %v, want %v", tt.cfg, same, tt.sameForA_B)
		}
	}
}

// TestLayoutSplitAmongEndpoints checks the split among more than two
// endpoints: the first endpoints take the remainder, one unit each.
func TestLayoutSplitAmongEndpoints(t *testing.T) {
	eps := []string{"a", "b", "c"}
	specs, err := LayoutConfig{Mode: ModeBulkhead, PoolSize: 10, Queue: 5, MaxWait: time.Second}.Pools(eps)
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]int{{4, 2}, {3, 2}, {3, 1}}
	for i, ps := range specs {
		if ps.Name != eps[i] || ps.Config.Size != want[i][0] || ps.Config.Queue != want[i][1] {
			t.Errorf("pool %d = %s %+v, want %s size %d queue %d", i, ps.Name, ps.Config, eps[i], want[i][0], want[i][1])
		}
	}
	if _, err := (LayoutConfig{Mode: ModeBulkhead, PoolSize: 2}).Pools(eps); err == nil {
		t.Error("a total of 2 permits for 3 bulkheads was accepted")
	}
}
