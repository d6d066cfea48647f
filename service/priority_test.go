package service

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TestPriorityReservation: sheddable calls that their dependency holds
// flood a shared pool of P; critical calls to a fast dependency then go
// through the same pool. With R permits reserved for critical calls,
// sheddable ones are refused past P−R at once and every critical call is
// served; without a reservation (R = 0) sheddable calls hold the whole
// pool and every critical call is refused.
func TestPriorityReservation(t *testing.T) {
	const p, criticalCalls = 4, 10
	for _, reserved := range []int{2, 0} {
		t.Run("reserved="+itoa(reserved), func(t *testing.T) {
			heldA := startHeldDep(t, 3*p)
			fastB := startDep(t, DepConfig{Name: "B", Latency: time.Millisecond, Size: 2})
			svc, url := startService(t, Config{Layout: LayoutConfig{Mode: ModeShared, PoolSize: p},
				Timeout: 30 * time.Second, Endpoints: TwoEndpoints(heldA.url, fastB),
				Priority: &PriorityConfig{Reserved: map[string]int{SharedPool: reserved}}})
			c := testClient(t)
			replies := make(chan reply, 3*p)
			var wg sync.WaitGroup
			for range 3 * p {
				wg.Go(func() { replies <- get(t, c, url+"/a", map[string]string{DefaultPriorityHeader: "sheddable"}) })
			}
			admitted := p - reserved
			heldA.awaitArrivals(t, admitted)
			wantReject := map[bool]string{true: RejectPriority, false: "full"}[reserved > 0]
			for range 3*p - admitted {
				if r := <-replies; r.status != http.StatusServiceUnavailable || r.header.Get(rundata.HeaderBulkheadReject) != wantReject {
					t.Errorf("sheddable past its share: %d %s, want 503 %s", r.status, r.header.Get(rundata.HeaderBulkheadReject), wantReject)
				}
			}
			ok := 0
			for range criticalCalls { // no header: critical by default
				if r := get(t, c, url+"/b", nil); r.status == http.StatusOK {
					ok++
				}
			}
			heldA.release()
			wg.Wait()
			t.Logf("reserved %d of %d: critical %d of %d ok while sheddable calls hold %d permits", reserved, p, ok, criticalCalls, admitted)
			if want := map[bool]int{true: criticalCalls}[reserved > 0]; ok != want {
				t.Errorf("critical calls: %d of %d ok, want %d", ok, criticalCalls, want)
			}
			req := svc.priority.requests
			if got, want := metricValue(t, req.WithLabelValues(SharedPool, "sheddable", answerOverShare)), map[bool]int{true: 3*p - admitted}[reserved > 0]; got != float64(want) {
				t.Errorf("sheddable over_share: %v, want %d", got, want)
			}
			if got := metricValue(t, req.WithLabelValues(SharedPool, "critical", answerOK)); got != float64(ok) {
				t.Errorf("critical ok: %v, want %d", got, ok)
			}
		})
	}
}

// TestPriorityReservedIdle: the reserved permits no critical call uses
// are exported as a gauge and as its time integral, so that two scrapes
// give the average idle reservation between them.
func TestPriorityReservedIdle(t *testing.T) {
	heldA := startHeldDep(t, 4)
	_, url := startService(t, Config{Layout: LayoutConfig{Mode: ModeShared, PoolSize: 4},
		Timeout: 30 * time.Second, Endpoints: TwoEndpoints(heldA.url, heldA.url),
		Priority: &PriorityConfig{Header: "X-Class", Default: ClassSheddable, Classes: map[string]Class{"b": ClassCritical},
			Reserved: map[string]int{SharedPool: 2}}})
	c := testClient(t)
	scrape := func() (idle, seconds float64) {
		m := get(t, c, url+"/metrics", nil).body
		return scrapeValue(t, m, `bulkheadlab_priority_reserved_idle_permits{pool="shared"}`),
			scrapeValue(t, m, `bulkheadlab_priority_reserved_idle_permit_seconds_total{pool="shared"}`)
	}
	const span = 300 * time.Millisecond
	// interval integrates the idle permits over about span. The integral
	// runs between the two scrapes' collections, which happen at unknown
	// times within their requests: its average is checked against the
	// shortest and the longest interval that fits.
	interval := func(want float64) (idle float64) {
		t.Helper()
		q0 := time.Now()
		_, s0 := scrape()
		r0 := time.Now()
		time.Sleep(span)
		q1 := time.Now()
		idle, s1 := scrape()
		r1 := time.Now()
		lo, hi := want*q1.Sub(r0).Seconds(), want*r1.Sub(q0).Seconds()
		if got := s1 - s0; got < lo*0.98 || got > hi*1.02 {
			t.Errorf("%v reserved permits idle for %v–%v: %.3f permit-seconds, want %.3f–%.3f", want, q1.Sub(r0), r1.Sub(q0), got, lo, hi)
		}
		return idle
	}
	if idle := interval(2); idle != 2 {
		t.Errorf("no critical call: %v reserved permits idle, want 2", idle)
	}
	var wg sync.WaitGroup
	wg.Go(func() { get(t, c, url+"/b", map[string]string{"X-Class": "sheddable"}) }) // b is fixed critical
	heldA.awaitArrivals(t, 1)
	if idle := interval(1); idle != 1 {
		t.Errorf("one critical call in flight: %v reserved permits idle, want 1", idle)
	}
	wg.Go(func() { get(t, c, url+"/a", map[string]string{"X-Class": "critical"}) })
	heldA.awaitArrivals(t, 1)
	if idle, _ := scrape(); idle != 0 {
		t.Errorf("two critical calls in flight: %v reserved permits idle, want 0", idle)
	}
	m := get(t, c, url+"/metrics", nil).body
	for _, want := range []string{
		`bulkheadlab_priority_class_limit{class="sheddable",pool="shared"} 2`,
		`bulkheadlab_priority_inflight{class="critical",pool="shared"} 2`,
		`bulkheadlab_priority_reserved_permits{pool="shared"} 2`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if r := get(t, c, url+"/a", map[string]string{"X-Class": "urgent"}); r.status != http.StatusBadRequest {
		t.Errorf("an unknown class: %d, want 400", r.status)
	}
	heldA.release()
	wg.Wait()
}

// scrapeValue returns the value of the series named (with its labels) in
// a text exposition.
func scrapeValue(t *testing.T, exposition, series string) float64 {
	t.Helper()
	for _, line := range strings.Split(exposition, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("no series %s", series)
	return 0
}

func TestPriorityConfigErrors(t *testing.T) {
	good := Config{Layout: LayoutConfig{Mode: ModeBulkhead, PoolSize: 4}, Timeout: time.Second,
		Endpoints: TwoEndpoints("http://127.0.0.1:1", "http://127.0.0.1:2")}
	for _, tt := range []struct {
		field string
		pc    PriorityConfig
	}{
		{"priority_header", PriorityConfig{Header: "X:P"}},
		{"priority_default", PriorityConfig{Default: "urgent"}},
		{"priority_classes", PriorityConfig{Classes: map[string]Class{"c": ClassCritical}}},
		{"priority_classes.a", PriorityConfig{Classes: map[string]Class{"a": "low"}}},
		{"priority_reserved", PriorityConfig{Reserved: map[string]int{"shared": 1}}},
		{"priority_reserved.a", PriorityConfig{Reserved: map[string]int{"a": 3}}},
		{"priority_reserved.b", PriorityConfig{Reserved: map[string]int{"b": -1}}},
		{"", PriorityConfig{Reserved: map[string]int{"a": 2, "b": 1}}},
		{"", PriorityConfig{}},
	} {
		cfg := good
		cfg.Priority = &tt.pc
		checkField(t, tt.pc, cfg.Validate(), tt.field)
	}
}

// TestPriorityNamesAreTheContract: the classes and the refusal outcome the
// analysis reads (package rundata) are the stage's own.
func TestPriorityNamesAreTheContract(t *testing.T) {
	if string(ClassCritical) != rundata.PriorityCritical || string(ClassSheddable) != rundata.PrioritySheddable || answerOverShare != rundata.PriorityOverShare {
		t.Errorf("classes %s, %s and outcome %s; rundata says %s, %s and %s", ClassCritical, ClassSheddable, answerOverShare,
			rundata.PriorityCritical, rundata.PrioritySheddable, rundata.PriorityOverShare)
	}
}
