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

// TestProxyFaultCarriesEveryField: every parameter of every fault type is
// a field of a condition's fault (by its name), and proxyFault carries
// each one into the proxy's fault; a parameter added to a type and not to
// the spec, or not carried, fails here.
func TestProxyFaultCarriesEveryField(t *testing.T) {
	byTag := map[string]int{}
	ft := reflect.TypeFor[Fault]()
	for i := range ft.NumField() {
		tag, _, _ := strings.Cut(ft.Field(i).Tag.Get("yaml"), ",")
		byTag[tag] = i
	}
	for _, typ := range faultproxy.Types() {
		ps, _ := faultproxy.TypeParams(typ)
		var full Fault
		fields.Fill(&full, fillSpec())
		f := Fault{Type: typ, Percent: 50}
		for _, p := range ps {
			i, ok := byTag[p.Name]
			if !ok {
				t.Errorf("type %s: parameter %s is no field of spec.Fault", typ, p.Name)
				continue
			}
			reflect.ValueOf(&f).Elem().Field(i).Set(reflect.ValueOf(full).Field(i))
		}
		pf := f.proxyFault()
		for _, p := range ps {
			i := byTag[p.Name]
			want := reflect.ValueOf(f).Field(i)
			w := normSpec(want)
			if w == nil {
				w = want.Interface()
			}
			if pf.Params == nil || !reflect.DeepEqual(p.Value(pf.Params), w) {
				t.Errorf("type %s: proxyFault carries %s as %v, want %v", typ, p.Name, pf.Params, w)
			}
		}
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
