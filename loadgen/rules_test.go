package loadgen

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestDefaultClassifier(t *testing.T) {
	cl, err := NewClassifier(DefaultRules())
	if err != nil {
		t.Fatal(err)
	}
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	tests := []struct {
		code uint16
		hdr  http.Header
		err  string
		want Class
	}{
		{200, nil, "", ClassOK},
		{204, nil, "", ClassOK},
		{503, h("X-Bulkhead-Reject", "full"), "503 Service Unavailable", ClassRejected},
		{503, nil, "503 Service Unavailable", ClassOther},
		{504, h("X-Dependency-Error", "timeout"), "", ClassDepTimeout},
		{502, h("x-dependency-error", "error"), "", ClassDepError},
		{502, nil, "", ClassOther},
		{0, nil, `Get "http://x": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`, ClassClientTimeout},
		{0, nil, "net/http: request canceled (Client.Timeout or context cancellation while reading body)", ClassClientTimeout},
		{0, nil, `Get "http://127.0.0.1:1/": dial tcp 127.0.0.1:1: connect: connection refused`, ClassTransportError},
		{0, nil, "read tcp: connection reset by peer", ClassTransportError},
		{0, nil, `Get "http://x": EOF`, ClassTransportError},
		{0, nil, "dial tcp: socket: too many open files", ClassTransportError},
		{0, nil, "something odd", ClassOther},
		{418, nil, "", ClassOther},
	}
	for _, tt := range tests {
		if got := cl.Classify(tt.code, tt.hdr, tt.err); got != tt.want {
			t.Errorf("Classify(%d, %v, %q) = %v, want %v", tt.code, tt.hdr, tt.err, got, tt.want)
		}
	}
}

func TestIsHarnessError(t *testing.T) {
	tests := []struct {
		code uint16
		err  string
		want bool
	}{
		{0, "dial tcp 127.0.0.1:80: socket: too many open files", true},
		{0, "dial tcp: connect: cannot assign requested address", true},
		{0, "connect: connection refused", false},
		{0, "Client.Timeout exceeded", false},
		{500, "too many open files", false},
		{0, "", false},
	}
	for _, tt := range tests {
		if got := IsHarnessError(tt.code, tt.err); got != tt.want {
			t.Errorf("IsHarnessError(%d, %q) = %v, want %v", tt.code, tt.err, got, tt.want)
		}
	}
}

func TestRulesDecode(t *testing.T) {
	const y = `
- {status: 429, class: rejected}
- {status: 5xx, header: X-Upstream, value: slow, class: dep_timeout}
- {error: "no healthy upstream", class: dep_error}
- {status: "500-501", class: other}
`
	var rs Rules
	if err := yaml.Unmarshal([]byte(y), &rs); err != nil {
		t.Fatal(err)
	}
	var fromJSON Rules
	js := `[{"status":429,"class":"rejected"},{"status":"5xx","header":"X-Upstream","value":"slow","class":"dep_timeout"},
		{"error":"no healthy upstream","class":"dep_error"},{"status":"500-501","class":"other"}]`
	if err := json.Unmarshal([]byte(js), &fromJSON); err != nil {
		t.Fatal(err)
	}
	if len(rs) != 4 || len(fromJSON) != 4 {
		t.Fatalf("yaml %+v json %+v", rs, fromJSON)
	}
	for i := range rs {
		if rs[i] != fromJSON[i] {
			t.Errorf("rule %d: yaml %+v != json %+v", i, rs[i], fromJSON[i])
		}
	}
	cl, err := NewClassifier(rs)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		code uint16
		hdr  http.Header
		err  string
		want Class
	}{
		{429, nil, "", ClassRejected},
		{503, http.Header{"X-Upstream": {"slow"}}, "", ClassDepTimeout},
		{503, http.Header{"X-Upstream": {"fast"}}, "", ClassOther},
		{0, nil, "x: no healthy upstream", ClassDepError},
		{200, nil, "", ClassOK}, // generic fallback
	}
	for _, c := range checks {
		if got := cl.Classify(c.code, c.hdr, c.err); got != c.want {
			t.Errorf("Classify(%d, %v, %q) = %v, want %v", c.code, c.hdr, c.err, got, c.want)
		}
	}
}

func TestRulesRejectBadInput(t *testing.T) {
	bad := []string{
		`[{"status":429}]`,                         // no class
		`[{"status":429,"class":"nope"}]`,          // unknown class
		`[{"status":"6xx","class":"ok"}]`,          // bad status
		`[{"status":"510-500","class":"ok"}]`,      // inverted range
		`[{"class":"ok"}]`,                         // no condition
		`[{"value":"x","class":"ok"}]`,             // value without header
		`[{"status":200,"class":"ok","stat":200}]`, // unknown field
	}
	for _, in := range bad {
		var rs Rules
		err := json.Unmarshal([]byte(in), &rs)
		if err == nil {
			err = rs.Validate()
		}
		if err == nil {
			t.Errorf("%s: accepted", in)
		}
	}
	var rs Rules
	if err := yaml.Unmarshal([]byte("- {status: 500}"), &rs); !errors.Is(err, ErrInvalidRule) {
		t.Errorf("yaml rule without class: err = %v", err)
	}
}

func FuzzStatus(f *testing.F) {
	for _, s := range []string{"503", "5xx", "500-504", "0", "", "-", "99999", "1xx-2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var st Status
		if err := st.UnmarshalText([]byte(s)); err != nil {
			return
		}
		lo, hi, err := st.bounds()
		if err != nil || lo > hi || hi > 999 {
			t.Fatalf("%q accepted but bounds = %d, %d, %v", s, lo, hi, err)
		}
	})
}
