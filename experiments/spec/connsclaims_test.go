package spec

import (
	"strings"
	"testing"
)

// TestConnsClaimsErrors: expectations.conns names modes of the matrix with
// the connection layouts their roles need; every error names the field.
func TestConnsClaimsErrors(t *testing.T) {
	const base = `name: t
service: {pool_size: 20, queue: 20, conns: 8}
conditions: [slow]
modes:
  - {name: nw, pools: bulkhead, conns_layout: shared}
  - {name: w, pools: bulkhead}
  - {name: s, pools: bulkhead, conns: 13}
  - {name: sh, pools: shared, conns_layout: shared}
`
	for _, tt := range []struct{ roles, want string }{
		{"{condition: slow, no_wall: nw, walled: w, sized: s, over: w}", ""},
		{"{condition: slow, no_wall: nw, walled: w}", ""},
		{"{condition: busy, no_wall: nw, walled: w}", `t.yaml:10: expectations.conns.condition: no condition "busy" in the matrix`},
		{"{condition: slow, no_wall: w, walled: w}", `expectations.conns.no_wall: mode "w" pools its connections per-dependency; the no-wall mode needs conns_layout: shared`},
		{"{condition: slow, no_wall: nw, walled: nw}", `expectations.conns.walled: mode "nw" shares one connection pool`},
		{"{condition: slow, no_wall: sh, walled: w}", `expectations.conns.no_wall: mode "sh" has no bulkhead of /a alone`},
		{"{condition: slow, no_wall: nw, walled: w, sized: w, over: w}", `expectations.conns.sized: mode "w": /a's bulkhead of 10 must be at most 0.8 × its connections (8)`},
		{"{condition: slow, no_wall: nw, walled: w, sized: s, over: s}", `expectations.conns.over: mode "s": /a's bulkhead of 10 must be above its connections (13)`},
		{"{condition: slow, no_wall: nw, walled: w, sized: s}", "expectations.conns.sized: sized and over go together"},
		{"{condition: slow, no_wall: nw, walled: nope}", `expectations.conns.walled: no mode "nope" in the matrix`},
		{"{condition: slow, no_wall: nw, walled: w, over_min_wait_t: -1}", "expectations.conns.over_min_wait_t: must be between 0 and 10"},
	} {
		_, err := Parse("t.yaml", []byte(base+"expectations:\n  conns: "+tt.roles+"\n"))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.roles, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want it to contain %q", tt.roles, err, tt.want)
		}
	}
}

// TestConnsClaimsDecidable: the connection verdicts are checkable only when
// expectations.conns names their runs, CONNS-SIZED only with sized and over.
func TestConnsClaimsDecidable(t *testing.T) {
	s, err := Preset("connection-pool-no-wall")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"CONNS-NO-WALL", "CONNS-SIZED"} {
		if why := s.Undecidable(p); why != "" {
			t.Errorf("preset: %s undecidable: %s", p, why)
		}
	}
	s.Expectations.Conns.Sized, s.Expectations.Conns.Over = "", ""
	if why := s.Undecidable("CONNS-SIZED"); !strings.Contains(why, "sized and over") {
		t.Errorf("without sized/over: CONNS-SIZED %q", why)
	}
	s.Expectations.Conns = nil
	if why := s.Undecidable("CONNS-NO-WALL"); !strings.Contains(why, "expectations.conns") {
		t.Errorf("without expectations.conns: CONNS-NO-WALL %q", why)
	}
}
