package spec

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/faultproxy/tcpproxy"
)

// throttleSpec throttles A's answers (4 KiB) to 16 KiB/s: each call of /a
// takes 250 ms longer.
const throttleSpec = `name: thin
service: {timeout: 1s}
dependencies:
  A: {latency: 10ms, jitter: 0ms, size: 4096}
conditions:
  - healthy
  - name: thin
    faults:
      - {type: throttle, bytes_per_second: 16KiB}
modes: [shared]
`

// TestThrottleFromASpec: a throttle fault written in a spec (its rate with
// a unit) reaches the proxy's faults in bytes per second, Little's law
// holds a call for its answer's time at the rate, the validate preview
// says what it does, and the resolved spec keeps it.
func TestThrottleFromASpec(t *testing.T) {
	s, err := Parse("thin.yaml", []byte(throttleSpec))
	if err != nil {
		t.Fatal(err)
	}
	c := s.condition("thin")
	if got, want := s.HoldingTime("A", c), 260*time.Millisecond; got != want {
		t.Errorf("holding time under the throttle %v, want %v (10ms + 4096 bytes at 16384 bytes/s)", got, want)
	}
	if got := c.DescribeFaults(); got != "throttle: answer bodies at 16384 bytes/s on 100 % of requests" {
		t.Errorf("described as %q", got)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(p.Runs, func(r plan.Run) bool { return r.Condition == "thin" })
	want := faultproxy.Fault{Type: faultproxy.TypeThrottle, Percent: 100, Params: faultproxy.Throttle{BytesPerSecond: 16 << 10}}
	if fs := p.Runs[i].Faults; len(fs) != 1 || fs[0].Component != "proxy-A" || !reflect.DeepEqual(fs[0].Faults, []faultproxy.Fault{want}) {
		t.Fatalf("faults %+v, want %+v on proxy-A", fs, want)
	}
	if err := faultproxy.ValidateFaults(p.Runs[i].Faults[0].Faults); err != nil {
		t.Errorf("the proxy refuses the planned faults: %v", err)
	}
	y, err := s.Marshal()
	if err != nil || !strings.Contains(string(y), "type: throttle\n        percent: 100\n        bytes_per_second: 16KiB\n") {
		t.Errorf("resolved spec (%v):\n%s", err, y)
	}
}

// TestThrottleOnOtherPlanes: on a TCP dependency a throttle is the
// downstream's bandwidth; a PostgreSQL dependency has none, and validate
// says so with the file, line and field.
func TestThrottleOnOtherPlanes(t *testing.T) {
	cond := "  - {name: thin, dependency: A, faults: [{type: throttle, bytes_per_second: 8KiB, percent: 50}]}\n"
	s, err := Parse("tcp.yaml", []byte(strings.Replace(tcpSpec, "%s", cond, 1)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(p.Runs, func(r plan.Run) bool { return r.Condition == "thin" })
	want := tcpproxy.Fault{Type: tcpproxy.TypeBandwidth, Percent: 50, Stream: tcpproxy.StreamDownstream, BytesPerSecond: 8 << 10}
	if got := p.Runs[i].Faults[0].TCP; len(got) != 1 || got[0] != want {
		t.Errorf("TCP faults %+v, want %+v", got, want)
	}
	_, err = Parse("pg.yaml", []byte(strings.Replace(pgSpec, "%s", cond, 1)))
	if want := "pg.yaml:12: conditions[4].faults[0].type: dependency A is a PostgreSQL server: a condition on it may have faults of the types with a PostgreSQL counterpart (latency, error, abort, hang), not throttle"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("on PostgreSQL: %v, want %q", err, want)
	}
}

// TestThrottleSpecErrors: a rate that is not one is refused with the file,
// line and field.
func TestThrottleSpecErrors(t *testing.T) {
	for _, tt := range []struct{ fault, want string }{
		{"{type: throttle}", "t.yaml:6: conditions[0].faults[0].bytes_per_second: must be between 1 and 1099511627776 bytes per second, got 0"},
		{"{type: throttle, bytes_per_second: fast}", `t.yaml:6: conditions[0].faults[0].bytes_per_second: invalid size "fast"`},
		{"{type: throttle, bytes_per_second: 16KiB, latency: 10ms}", "t.yaml:6: conditions[0].faults[0].latency: only valid for type latency or capacity"},
		{"{type: latency, latency: 10ms, bytes_per_second: 1KiB}", "t.yaml:6: conditions[0].faults[0].bytes_per_second: only valid for type throttle"},
		{"{type: throttle, bytes_per_second: 10B}", "t.yaml:6: conditions[0].faults[0].bytes_per_second: a 64-byte answer at 10 bytes/s (6.4s) is never shorter than load.client_timeout (1s)"},
	} {
		yaml := "name: t\nload: {client_timeout: 1s}\nconditions:\n  - name: x\n    faults:\n      - " + tt.fault + "\n"
		_, err := Parse("t.yaml", []byte(yaml))
		if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error\n%v\nwant it to contain %q", tt.fault, err, tt.want)
		}
	}
}
