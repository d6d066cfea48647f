package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
)

// FuzzParse checks that no input makes Parse panic, hang or answer with
// anything but ErrInvalidSpec, and that an accepted spec expands,
// previews and marshals into a resolved spec that Parse accepts again
// (--resume reloads it from the results folder).
//
// The fuzzer minimizes every input that finds new coverage, with O(n²)
// executions for n bytes and for up to -fuzzminimizetime (60 s by
// default), and reports none of them until it is done: the status line
// then shows 0 execs/s. Keep executions cheap (the seeds are the presets
// without their comment lines; the preview runs once per condition ×
// mode, not per repeat) and cap minimization:
//
//	go test -run='^$' -fuzz='^FuzzParse$' -fuzzminimizetime=1s ./experiments/spec
func FuzzParse(f *testing.F) {
	for _, n := range PresetNames() {
		b, err := PresetSource(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(stripComments(b))
	}
	// A condition of every fault type, written as its registration's
	// example: the parameters a spec may give.
	for _, typ := range faultproxy.Types() {
		ex, _ := faultproxy.Example(typ)
		b, err := json.Marshal(ex)
		if err != nil {
			f.Fatal(err)
		}
		f.Add([]byte("name: t\nconditions:\n  - {name: x, faults: [" + string(b) + "]}\n"))
	}
	for _, s := range []string{
		minimal,
		"name: t\nconditions:\n  - {name: x, faults: [{type: hang}]}\nmodes: [{name: bulkhead, queues: {a: 0, b: 1}}]\n",
		"a: &a [*a, *a]\nname: *a\n",
		"name: t\nexternal: {rules: {x: [1, 2]}}\n",
		"name: t\nexternal: {rules: &r [*r]}\n",
		"name: t\nrepeats: 2\nphases: {fault: 4T}\nconditions:\n  - {name: x, dependency: B, faults: [{type: error, status: 500, headers: &h {k: v}}]}\n  - {name: y, faults: [{type: error, percent: 5, headers: *h}]}\n",
		"name: t\ndescription: &d long\nconditions: [{name: x, description: *d, rates: {a: 1.5}}]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("f.yaml", data)
		if err != nil {
			if !errors.Is(err, ErrInvalidSpec) {
				t.Fatalf("error %v is not ErrInvalidSpec", err)
			}
			return
		}
		for _, r := range s.Expand() {
			if r.Repeat == 1 {
				_ = s.Preview(r.Condition, r.Mode)
			}
		}
		b, err := s.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse("resolved.yaml", b); err != nil {
			t.Fatalf("resolved spec does not parse again: %v\n%s", err, b)
		}
	})
}

// stripComments drops whole-line comments and blank lines.
func stripComments(b []byte) []byte {
	var out []byte
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if t := strings.TrimSpace(string(line)); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		out = append(out, line...)
	}
	return out
}
