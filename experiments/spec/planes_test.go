package spec

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/faultproxy/pgproxy"
	"github.com/bulkheadlab/bulkheadlab/faultproxy/tcpproxy"
)

// TestEveryTypeOnEveryPlane: a fault of every type of the fault proxy (its
// registration's example, written as the control API's JSON, which YAML
// reads), on a dependency of each plane, is accepted where its type has a
// counterpart on that plane — and planned as faults that plane's proxy
// takes — and refused by validate with the file, line and field (its
// type) where it has none. An allow-list: a type added without a
// counterpart on the TCP or PostgreSQL plane never reaches that plane's
// proxy, and one whose counterpart that plane refuses fails here.
func TestEveryTypeOnEveryPlane(t *testing.T) {
	planes := []struct {
		plane, spec, dep string
		valid            func(r []byte) error // the planned faults, as JSON
	}{
		{faultproxy.PlaneHTTP, tcpSpec, "B", func(b []byte) error {
			_, err := faultproxy.ParseFaults(strings.NewReader(`{"faults":` + string(b) + `}`))
			return err
		}},
		{faultproxy.PlaneTCP, tcpSpec, "A", func(b []byte) error {
			_, err := tcpproxy.ParseFaults(strings.NewReader(`{"faults":` + string(b) + `}`))
			return err
		}},
		{faultproxy.PlanePostgres, pgSpec, "A", func(b []byte) error {
			_, err := pgproxy.ParseFaults(strings.NewReader(`{"faults":` + string(b) + `}`))
			return err
		}},
	}
	for _, typ := range faultproxy.Types() {
		ex, ok := faultproxy.Example(typ)
		if !ok || ex.Type != typ {
			t.Fatalf("type %s: example %+v", typ, ex)
		}
		b, err := json.Marshal(ex)
		if err != nil {
			t.Fatal(err)
		}
		for _, pl := range planes {
			cond := fmt.Sprintf("  - {name: x, dependency: %s, faults: [%s]}\n", pl.dep, b)
			s, err := Parse("p.yaml", []byte(strings.Replace(pl.spec, "%s", cond, 1)))
			if !slices.Contains(faultproxy.Planes(typ), pl.plane) {
				want := "p.yaml:12: conditions[4].faults[0].type: dependency A "
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%s on the %s plane: error %v, want one with %q", typ, pl.plane, err, want)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s on the %s plane: %v", typ, pl.plane, err)
				continue
			}
			p, err := s.Plan()
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(p.Runs, func(r plan.Run) bool { return r.Condition == "x" })
			fs := p.Runs[i].Faults
			var planned any = fs[0].Faults
			switch pl.plane {
			case faultproxy.PlaneTCP:
				planned = fs[0].TCP
			case faultproxy.PlanePostgres:
				planned = fs[0].Postgres
			}
			pb, _ := json.Marshal(planned)
			if len(fs) != 1 || pl.valid(pb) != nil || strings.Count(string(pb), `"type"`) != 1 {
				t.Errorf("%s on the %s plane: planned %s (%v)", typ, pl.plane, pb, pl.valid(pb))
			}
		}
	}
}
