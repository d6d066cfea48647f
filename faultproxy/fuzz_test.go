package faultproxy

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// FuzzParseFaults: the parser never panics, errors always wrap
// ErrInvalidFault, accepted sets round-trip, validate, and give decisions
// with non-negative delays. Run with go test -fuzz=FuzzParseFaults.
func FuzzParseFaults(f *testing.F) {
	for _, s := range []string{
		`{"faults":[{"type":"latency","percent":100,"latency":"225ms","jitter":"10ms","distribution":"uniform"}]}`,
		`{"faults":[{"type":"latency","percent":50,"latency":"1ms","jitter":"1h","distribution":"pareto","max":"1h"}]}`,
		`{"faults":[{"type":"latency","latency":"1ns","jitter":"1h","distribution":"lognormal"}]}`,
		`{"faults":[{"type":"error","percent":100,"status":503,"body":"x","headers":{"K":"V"}}]}`,
		`{"faults":[{"type":"abort","percent":5},{"type":"hang","percent":1}]}`,
		`{"faults":[{"type":"abort","percent":1e309}]}`,
		`{"faults":[{"type":"capacity","percent":50,"capacity":4,"queue":8,"latency":"20ms","jitter":"2ms"}]}`,
		`{"faults":[{"type":"capacity","capacity":1},{"type":"capacity","capacity":1}]}`,
		`{"faults":[{"type":"latency","latency":"10ms"},{"type":"payload","percent":30,"size":4096}]}`,
		`{"faults":[{"type":"payload","size":1}]}`,
		`{"faults":null}`, `{}`, `[]`, `null`, ``, `{"faults":[{}]}`,
	} {
		f.Add([]byte(s))
	}
	// Every type's example, its parameters as the registration writes them.
	for _, typ := range Types() {
		ex, _ := Example(typ)
		b, err := marshalFaults([]Fault{ex})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fs, err := ParseFaults(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrInvalidFault) {
				t.Fatalf("ParseFaults(%q) error %v does not wrap ErrInvalidFault", data, err)
			}
			return
		}
		if err := ValidateFaults(fs); err != nil {
			t.Fatalf("ParseFaults(%q) accepted an invalid set: %v", data, err)
		}
		b, err := marshalFaults(fs)
		if err != nil {
			t.Fatalf("marshal %+v: %v", fs, err)
		}
		again, err := ParseFaults(bytes.NewReader(b))
		if err != nil || !reflect.DeepEqual(normalizeNil(again), normalizeNil(fs)) {
			t.Fatalf("round trip of %q via %s: %+v, %v; want %+v", data, b, again, err, fs)
		}
		set := newFaultSet(fs)
		for seq := uint64(1); seq <= 20; seq++ {
			if d := set.decide(1, seq, allMatched); d.Delay < 0 {
				t.Fatalf("faults %+v: negative delay %v", fs, d.Delay)
			}
		}
	})
}

func normalizeNil(fs []Fault) []Fault {
	if len(fs) == 0 {
		return nil
	}
	return fs
}
