package control_test

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/faultproxy/internal/control"
	"github.com/bulkheadlab/bulkheadlab/faultproxy/pgproxy"
	"github.com/bulkheadlab/bulkheadlab/faultproxy/tcpproxy"
)

// FuzzPlaneFaults feeds one control body to the PUT /faults decoder of
// every plane (HTTP, TCP, PostgreSQL): none panics, every error wraps
// ErrInvalidFault, and a set a plane accepts is valid there and comes back
// equal from its own JSON form (what GET /faults answers and the runner
// records). Run with
//
//	go test -run='^$' -fuzz=FuzzPlaneFaults ./faultproxy/internal/control
func FuzzPlaneFaults(f *testing.F) {
	for _, typ := range faultproxy.Types() {
		ex, _ := faultproxy.Example(typ)
		b, err := control.Body([]faultproxy.Fault{ex})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		for _, pl := range faultproxy.Planes(typ)[1:] {
			w, err := ex.OnPlane(pl)
			if err != nil {
				f.Fatal(err)
			}
			b, _ := control.Body([]map[string]any{w})
			f.Add(b)
		}
	}
	for _, s := range []string{
		`{"faults":[{"type":"latency","percent":50,"stream":"both","latency":100,"jitter":"5ms"}]}`,
		`{"faults":[{"type":"bandwidth","rate":64},{"type":"slicer","average_size":16,"size_variation":8,"delay":10}]}`,
		`{"faults":[{"type":"error","code":"53300","message":"sorry","match":"^UPDATE"},{"type":"hang","match":"("}]}`,
		`{"faults":[{"type":"latency","latency":"5ms","match":"GET|HEAD ^/reports/"},{"type":"error","match":"/a b"}]}`,
		`{"faults":[{"type":"throttle","bytes_per_second":1e3}]}`, `{"faults":[{"type":"error","headers":{"K":"V"},"status":0}]}`,
		`{"faults":null}`, `{}`, `[]`, ``, `{"faults":[{}]}`, `{"faults":[null]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		roundTrip(t, "http", data, faultproxy.ParseFaults, faultproxy.ValidateFaults)
		roundTrip(t, "tcp", data, tcpproxy.ParseFaults, tcpproxy.ValidateFaults)
		roundTrip(t, "postgres", data, pgproxy.ParseFaults, pgproxy.ValidateFaults)
	})
}

// roundTrip holds one plane's decoder to FuzzPlaneFaults' properties.
func roundTrip[F any](t *testing.T, plane string, data []byte, parse func(io.Reader) ([]F, error), validate func([]F) error) {
	t.Helper()
	fs, err := parse(bytes.NewReader(data))
	if err != nil {
		if !errors.Is(err, faultproxy.ErrInvalidFault) {
			t.Fatalf("%s: ParseFaults(%q): error %v does not wrap ErrInvalidFault", plane, data, err)
		}
		return
	}
	if err := validate(fs); err != nil {
		t.Fatalf("%s: ParseFaults(%q) accepted an invalid set: %v", plane, data, err)
	}
	b, err := control.Body(fs)
	if err != nil {
		t.Fatalf("%s: encoding %+v: %v", plane, fs, err)
	}
	again, err := parse(bytes.NewReader(b))
	if err != nil || len(again) != len(fs) || (len(fs) > 0 && !reflect.DeepEqual(again, fs)) {
		t.Fatalf("%s: round trip of %q via %s: %+v, %v; want %+v", plane, data, b, again, err, fs)
	}
}

// TestPlanesRefuseTypesTheyLack: each plane's control API refuses, naming
// faults[0].type, a fault of any type another plane has and it lacks.
func TestPlanesRefuseTypesTheyLack(t *testing.T) {
	planes := map[string]struct {
		types []string
		parse func(io.Reader) error
	}{
		"http":     {faultproxy.Types(), func(r io.Reader) error { _, err := faultproxy.ParseFaults(r); return err }},
		"tcp":      {tcpproxy.Types, func(r io.Reader) error { _, err := tcpproxy.ParseFaults(r); return err }},
		"postgres": {pgproxy.Types, func(r io.Reader) error { _, err := pgproxy.ParseFaults(r); return err }},
	}
	all := map[string]bool{"": true}
	for _, pl := range planes {
		for _, typ := range pl.types {
			all[typ] = true
		}
	}
	for name, pl := range planes {
		for typ := range all {
			if slices.Contains(pl.types, typ) {
				continue
			}
			err := pl.parse(strings.NewReader(`{"faults":[{"type":"` + typ + `"}]}`))
			var fe *faultproxy.FieldError
			if !errors.As(err, &fe) || fe.Field != "faults[0].type" {
				t.Errorf("the %s plane, a fault of type %q: %v, want an error naming faults[0].type", name, typ, err)
			}
		}
	}
}
