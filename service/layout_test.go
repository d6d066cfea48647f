package service

import (
	"errors"
	"reflect"
	"strings"
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

// TestLayoutGroups: the endpoints of a pool group draw from one pool named
// after the group, every other endpoint from its own; the total is split
// among the pools, not the endpoints, and PoolSizes and Queues are keyed
// by pool. The pools come in the order of their first endpoint.
func TestLayoutGroups(t *testing.T) {
	eps := []string{"search", "cart", "stock", "checkout"}
	groups := map[string][]string{"core": {"checkout", "cart"}}
	for _, tt := range []struct {
		name   string
		cfg    LayoutConfig
		sizes  []int // search, core, stock
		queues []int
	}{
		{"split", LayoutConfig{Mode: ModeBulkhead, PoolSize: 10, Queue: 5, MaxWait: time.Second, Groups: groups}, []int{4, 3, 3}, []int{2, 2, 1}},
		{"explicit", LayoutConfig{Mode: ModeBulkhead, PoolSize: 0, MaxWait: time.Second, Groups: groups,
			PoolSizes: map[string]int{"search": 2, "core": 6, "stock": 1}, Queues: map[string]int{"search": 0, "core": 4, "stock": 1}},
			[]int{2, 6, 1}, []int{0, 4, 1}},
	} {
		specs, err := tt.cfg.Pools(eps)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		wantNames := []string{"search", "core", "stock"}
		wantEndpoints := [][]string{{"search"}, {"cart", "checkout"}, {"stock"}}
		if len(specs) != 3 {
			t.Fatalf("%s: %d pools %+v, want %v", tt.name, len(specs), specs, wantNames)
		}
		for i, ps := range specs {
			if ps.Name != wantNames[i] || !reflect.DeepEqual(ps.Endpoints, wantEndpoints[i]) ||
				ps.Config.Size != tt.sizes[i] || ps.Config.Queue != tt.queues[i] {
				t.Errorf("%s: pool %d = %s %v %+v, want %s %v size %d queue %d", tt.name, i, ps.Name, ps.Endpoints, ps.Config,
					wantNames[i], wantEndpoints[i], tt.sizes[i], tt.queues[i])
			}
		}
		l, err := NewLayout(tt.cfg, eps)
		if err != nil {
			t.Fatalf("%s: NewLayout: %v", tt.name, err)
		}
		if p := l.Pool("cart"); p == nil || p != l.Pool("checkout") || p.Name() != "core" || p.Config().Size != tt.sizes[1] {
			t.Errorf("%s: cart and checkout draw from %v and %v, want one pool core of %d", tt.name, l.Pool("cart"), l.Pool("checkout"), tt.sizes[1])
		}
		if l.Pool("search") == l.Pool("cart") || l.Pool("stock") == l.Pool("cart") || l.Pool("search") == l.Pool("stock") {
			t.Errorf("%s: search, stock and core share a pool", tt.name)
		}
		if n := len(l.Pools()); n != 3 {
			t.Errorf("%s: layout has %d pools, want 3", tt.name, n)
		}
	}

	// A group may be named like one of its own endpoints, and may hold one
	// endpoint only.
	specs, err := LayoutConfig{Mode: ModeBulkhead, PoolSize: 4, Groups: map[string][]string{"cart": {"checkout", "cart"}, "solo": {"stock"}}}.Pools(eps)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ps := range specs {
		names = append(names, ps.Name)
	}
	if !reflect.DeepEqual(names, []string{"search", "cart", "solo"}) || !reflect.DeepEqual(specs[1].Endpoints, []string{"cart", "checkout"}) {
		t.Errorf("groups cart and solo: pools %+v", specs)
	}

	// The test fault still routes every endpoint to one semaphore.
	l, err := NewLayout(LayoutConfig{Mode: ModeBulkhead, PoolSize: 9, MaxWait: time.Second, Groups: groups, BrokenSharedBulkhead: true}, eps)
	if err != nil {
		t.Fatal(err)
	}
	if p := l.Pool("search"); p != l.Pool("cart") || p != l.Pool("stock") || p.Config().Size != 9 || len(l.Pools()) != 3 {
		t.Errorf("broken shared bulkhead with a group: pools %v, search's %v, want every endpoint on one pool of 9", l.Pools(), p)
	}
}

// TestLayoutGroupErrors: every invalid group is a *ConfigError naming the
// field in the spec's style.
func TestLayoutGroupErrors(t *testing.T) {
	eps := []string{"search", "cart", "stock", "checkout"}
	core := map[string][]string{"core": {"checkout", "cart"}}
	for _, tt := range []struct {
		cfg   LayoutConfig
		field string
		msg   string
	}{
		{LayoutConfig{Mode: ModeShared, PoolSize: 4, Groups: core}, "pool_groups", "only applies to bulkhead mode"},
		{LayoutConfig{Mode: ModeBulkhead, PoolSize: 4, Groups: map[string][]string{"Core": {"cart"}}}, "pool_groups.Core", `pool group name "Core": use 1–32 of`},
		{LayoutConfig{Mode: ModeBulkhead, PoolSize: 4, Groups: map[string][]string{"metrics": {"cart"}}}, "pool_groups.metrics", "is reserved"},
		{LayoutConfig{Mode: ModeBulkhead, PoolSize: 4, Groups: map[string][]string{"search": {"cart", "checkout"}}}, "pool_groups.search",
			`pool name "search" is also the name of endpoint "search", which is not in the group`},
		{LayoutConfig{Mode: ModeBulkhead, PoolSize: 4, Groups: map[string][]string{"core": {}}}, "pool_groups.core", "at least one endpoint is required"},
		{LayoutConfig{Mode: ModeBulkhead, PoolSize: 4, Groups: map[string][]string{"core": nil}}, "pool_groups.core", "at least one endpoint is required"},
		{LayoutConfig{Mode: ModeBulkhead, PoolSize: 4, Groups: map[string][]string{"core": {"cart", "basket"}}}, "pool_groups.core[1]", `no endpoint "basket"`},
		{LayoutConfig{Mode: ModeBulkhead, PoolSize: 4, Groups: map[string][]string{"core": {"cart", "checkout", "cart"}}}, "pool_groups.core[2]", `endpoint "cart" is listed twice`},
		{LayoutConfig{Mode: ModeBulkhead, PoolSize: 4, Groups: map[string][]string{"core": {"cart"}, "more": {"search", "cart"}}}, "pool_groups.more[1]",
			`endpoint "cart" is in pool group "core" already`},
		{LayoutConfig{Mode: ModeBulkhead, PoolSize: 2, Groups: core}, "pool_size", "must be at least 3 in bulkhead mode (one per pool), got 2"},
		{LayoutConfig{Mode: ModeBulkhead, Groups: core, PoolSizes: map[string]int{"search": 1, "cart": 1, "checkout": 1, "stock": 1}}, "pool_sizes",
			"unknown pool(s) cart,checkout; the pools are search, core, stock"},
		{LayoutConfig{Mode: ModeBulkhead, Groups: core, PoolSizes: map[string]int{"search": 1, "stock": 1}}, "pool_sizes.core", "missing"},
		{LayoutConfig{Mode: ModeBulkhead, Groups: core, PoolSizes: map[string]int{"search": 1, "core": 0, "stock": 1}}, "pool_sizes.core", "must be"},
		{LayoutConfig{Mode: ModeBulkhead, PoolSize: 6, Groups: core, Queues: map[string]int{"search": 1, "core": 1}}, "queues.stock", "missing"},
	} {
		_, err := tt.cfg.Pools(eps)
		var ce *ConfigError
		if !errors.As(err, &ce) || !errors.Is(err, ErrInvalidConfig) || ce.Field != tt.field || !strings.Contains(ce.Msg, tt.msg) {
			t.Errorf("Pools(%+v) = %v, want a *ConfigError %s: ...%s...", tt.cfg, err, tt.field, tt.msg)
		}
		if _, err2 := NewLayout(tt.cfg, eps); err2 == nil || err2.Error() != err.Error() {
			t.Errorf("NewLayout(%+v) = %v, want Pools' error %v", tt.cfg, err2, err)
		}
	}
}

// TestGroupRefusesFailsafe: failsafe-go's bulkhead replaces an endpoint's
// own pool, which an endpoint of a pool group does not have.
func TestGroupRefusesFailsafe(t *testing.T) {
	c := Config{Layout: LayoutConfig{Mode: ModeBulkhead, PoolSize: 4, Queue: 0, Groups: map[string][]string{"ab": {"a", "b"}}},
		Timeout: time.Second, Endpoints: TwoEndpoints("http://127.0.0.1:1", "http://127.0.0.1:2"),
		Policies: map[string]PolicyConfig{"b": {Bulkhead: BulkheadFailsafe}}}
	var ce *ConfigError
	if err := c.Validate(); !errors.As(err, &ce) || ce.Field != "policies.b.bulkhead" {
		t.Errorf("failsafe on an endpoint of a group: %v, want a *ConfigError policies.b.bulkhead", err)
	}
	c.Layout.Groups = nil
	if err := c.Validate(); err != nil {
		t.Errorf("failsafe without groups: %v", err)
	}
}
