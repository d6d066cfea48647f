package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/experiments/spec"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TestCalibrate measures the call graph of a service whose three
// endpoints call two dependencies (/a and /c call A, /b calls B): each
// endpoint's requests alone reach exactly its own dependency's proxy,
// once per request.
func TestCalibrate(t *testing.T) {
	text := strings.Replace(shortSpec, "load: {rates: {a: 40, b: 40}, window: 250ms}",
		"load: {rates: {a: 40, b: 40, c: 20}, window: 250ms}\nendpoints: [{name: a, dependency: A}, {name: b, dependency: B}, {name: c, dependency: A}]", 1)
	text = strings.Replace(text, "modes: [shared, bulkhead]", "modes: [bulkhead]", 1)
	text = strings.Replace(text, "pool_size: 6", "pool_size: 9", 1)
	p := testPlan(t, text, func(*spec.Spec) {})
	logs := t.TempDir()
	g, err := Calibrate(context.Background(), inProcess(), p.Runs[0], rundata.Calibration{Requests: 10, Rate: 50}, func(c string) string { return filepath.Join(logs, c+".log") })
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(g.Edges); got != "map[a:[A] b:[B] c:[A]]" {
		t.Errorf("edges %s, want a→A, b→B, c→A; calls %+v", got, g.Endpoints)
	}
	for _, e := range g.Endpoints {
		if e.OK != 10 {
			t.Errorf("/%s: %d of 10 calibration requests ok", e.Endpoint, e.OK)
		}
		for dep, n := range e.Calls {
			t.Logf("/%s → %s: %.2f calls per request", e.Endpoint, dep, n)
			if called := strings.Contains(fmt.Sprint(g.Edges[e.Endpoint]), dep); called && (n < 0.9 || n > 1.1) {
				t.Errorf("/%s → %s: %.2f calls per request, want 1", e.Endpoint, dep, n)
			}
		}
	}
	if len(g.Failed) != 0 {
		t.Errorf("failed endpoints %v", g.Failed)
	}
}
