package spec

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/fields"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// fillSpec returns a filler of spec values for fields.Fill: durations
// absolute (a resolved spec's) and distinct, every other field as Fill
// does.
func fillSpec() func(string, reflect.Value) bool {
	n := 0
	return func(_ string, v reflect.Value) bool {
		if v.Type() != reflect.TypeFor[Duration]() {
			return false
		}
		n++
		v.Set(reflect.ValueOf(Abs(time.Duration(n) * time.Millisecond)))
		return true
	}
}

// normSpec is a spec value as the component holds it.
func normSpec(v reflect.Value) any {
	switch d := v.Interface().(type) {
	case Duration:
		return d.D
	case ByteSize:
		return int(d)
	}
	return nil
}

// TestProxyFaultCarriesEveryField: a condition's fault and the proxy's
// have the same fields, and proxyFault carries every one; a field added to
// either shape and not to the other, or not carried, fails here.
func TestProxyFaultCarriesEveryField(t *testing.T) {
	if m := fields.Missing(faultproxy.Fault{}, Fault{}); len(m) > 0 {
		t.Errorf("faultproxy.Fault has fields spec.Fault lacks: %v", m)
	}
	var f Fault
	fields.Fill(&f, fillSpec())
	var bad []string
	for _, b := range fields.Carried(f, f.proxyFault(), normSpec) {
		// A PostgreSQL dependency's own fields, which pgFault carries
		// (TestPostgresUpstreamPlan).
		if !strings.HasPrefix(b, "Fault.Match ") && !strings.HasPrefix(b, "Fault.Code ") {
			bad = append(bad, b)
		}
	}
	if len(bad) > 0 {
		t.Errorf("proxyFault does not carry: %v", bad)
	}
}

// TestPolicyConfigCarriesEveryField: a spec's policy stack and the
// service's have the same fields, stage by stage, and config carries every
// one (the retry's seed is the run's, not the spec's).
func TestPolicyConfigCarriesEveryField(t *testing.T) {
	for _, pair := range [][2]any{
		{service.PolicyConfig{}, Policy{}}, {service.RetryConfig{}, RetrySpec{}}, {service.BudgetConfig{}, BudgetSpec{}},
		{service.BreakerConfig{}, BreakerSpec{}}, {service.LimiterConfig{}, LimiterSpec{}},
	} {
		if m := fields.Missing(pair[0], pair[1], "Seed"); len(m) > 0 {
			t.Errorf("service.%T has fields spec.%T lacks: %v", pair[0], pair[1], m)
		}
	}
	var p Policy
	fields.Fill(&p, fillSpec())
	pc := p.config(42)
	if bad := fields.Carried(p, pc, normSpec); len(bad) > 0 {
		t.Errorf("config does not carry: %v", bad)
	}
	if pc.Retry.Seed != 42 {
		t.Errorf("retry seed %d, want the run's 42", pc.Retry.Seed)
	}
}
