package spec

import (
	"reflect"
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

// TestProxyFaultCarriesEveryField: every parameter of every fault type,
// written in a condition's fault as its kind is, reaches the proxy's fault
// through proxyFault with its value; a kind the spec cannot hold, or a
// parameter not carried, fails here.
func TestProxyFaultCarriesEveryField(t *testing.T) {
	for _, typ := range faultproxy.Types() {
		ps, _ := faultproxy.TypeParams(typ)
		f := Fault{Type: typ, Percent: 50, Params: Params{}}
		for _, p := range ps {
			v := reflect.New(specType(p.Kind))
			fields.Fill(v.Interface(), fillSpec())
			f.Params[p.Name] = v.Elem().Interface()
		}
		pf, err := f.toProxy()
		if err != nil {
			t.Fatalf("type %s: %v", typ, err)
		}
		if pf.Type != typ || pf.Percent != 50 {
			t.Errorf("type %s: proxy fault %+v", typ, pf)
		}
		for _, p := range ps {
			want := reflect.ValueOf(f.Params[p.Name])
			w := normSpec(want)
			if w == nil {
				w = want.Interface()
			}
			if got := reflect.ValueOf(p.Value(pf.Params)); got.Kind() == reflect.Int || got.Kind() == reflect.Int64 {
				if reflect.ValueOf(w).Int() != got.Int() {
					t.Errorf("type %s: %s carried as %v, want %v", typ, p.Name, got, w)
				}
			} else if !reflect.DeepEqual(got.Interface(), w) {
				t.Errorf("type %s: %s carried as %v, want %v", typ, p.Name, got, w)
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
