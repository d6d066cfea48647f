package faultproxy

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseFaultsValid(t *testing.T) {
	tests := []struct {
		body string
		want []Fault
	}{
		{`{"faults":[]}`, []Fault{}},
		{`{}`, []Fault{}},
		{`{"faults":[{"type":"latency","percent":100,"latency":"225ms","jitter":"10ms","distribution":"uniform"}]}`,
			[]Fault{{Type: TypeLatency, Percent: 100, Params: Delay{Latency: 225 * time.Millisecond, Jitter: 10 * time.Millisecond, Distribution: DistUniform}}}},
		{`{"faults":[{"type":"latency","latency":"1s"}]}`, // percent defaults to 100
			[]Fault{{Type: TypeLatency, Percent: 100, Params: Delay{Latency: time.Second, Distribution: DistUniform}}}},
		{`{"faults":[{"type":"latency","percent":50,"latency":"100ms","jitter":"20ms","distribution":"pareto"}]}`,
			[]Fault{{Type: TypeLatency, Percent: 50, Params: Delay{Latency: 100 * time.Millisecond, Jitter: 20 * time.Millisecond, Distribution: DistPareto, Max: 2100 * time.Millisecond}}}},
		{`{"faults":[{"type":"error","percent":100,"status":500,"body":"x","headers":{"K":"V"}}]}`,
			[]Fault{{Type: TypeError, Percent: 100, Params: Reply{Status: 500, Body: "x", Headers: map[string]string{"K": "V"}}}}},
		{`{"faults":[{"type":"error","percent":0}]}`, []Fault{{Type: TypeError, Percent: 0, Params: Reply{Status: 503}}}},
		{`{"faults":[{"type":"abort","percent":5},{"type":"hang","percent":1}]}`,
			[]Fault{{Type: TypeAbort, Percent: 5}, {Type: TypeHang, Percent: 1}}},
		{`{"faults":[{"type":"capacity","capacity":4}]}`, // queue defaults to MaxQueue; no service time
			[]Fault{{Type: TypeCapacity, Percent: 100, Params: Capacity{Capacity: 4, Queue: MaxQueue}}}},
		{`{"faults":[{"type":"capacity","percent":50,"capacity":4,"queue":8,"latency":"20ms","jitter":"2ms"}]}`,
			[]Fault{{Type: TypeCapacity, Percent: 50, Params: Capacity{Capacity: 4, Queue: 8, Latency: 20 * time.Millisecond, Jitter: 2 * time.Millisecond, Distribution: DistUniform}}}},
		{`{"faults":[{"type":"capacity","capacity":1,"latency":"10ms","jitter":"5ms","distribution":"pareto"},{"type":"error","percent":1}]}`,
			[]Fault{{Type: TypeCapacity, Percent: 100, Params: Capacity{Capacity: 1, Queue: MaxQueue, Latency: 10 * time.Millisecond, Jitter: 5 * time.Millisecond, Distribution: DistPareto, Max: 510 * time.Millisecond}}, {Type: TypeError, Percent: 1, Params: Reply{Status: 503}}}},
		{`{"faults":[{"type":"latency","latency":"10ms"},{"type":"payload","percent":30,"size":262144}]}`,
			[]Fault{{Type: TypeLatency, Percent: 100, Params: Delay{Latency: 10 * time.Millisecond, Distribution: DistUniform}}, {Type: TypePayload, Percent: 30, Params: Payload{Size: 262144}}}},
	}
	for _, tt := range tests {
		got, err := ParseFaults(strings.NewReader(tt.body))
		if err != nil {
			t.Errorf("ParseFaults(%s): %v", tt.body, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseFaults(%s) = %+v, want %+v", tt.body, got, tt.want)
		}
	}
}

func TestParseFaultsInvalid(t *testing.T) {
	tests := []struct {
		body      string
		wantField string // substring of the message
	}{
		{`{"faults":[{"type":"latency","latency":"-1ms"}]}`, "faults[0].latency: must not be negative"},
		{`{"faults":[{"type":"latency","latency":"10ms","jitter":"-1ms"}]}`, "faults[0].jitter: must not be negative"},
		{`{"faults":[{"type":"latency","latency":"10ms","jitter":"20ms"}]}`, "faults[0].jitter: 20ms exceeds latency"},
		{`{"faults":[{"type":"latency","latency":"2h"}]}`, "faults[0].latency: must be at most"},
		{`{"faults":[{"type":"latency","latency":"soon"}]}`, "faults[0].latency: not a Go duration"},
		{`{"faults":[{"type":"latency","latency":225}]}`, "faults[0].latency: want string, got JSON number"},
		{`{"faults":[{"type":"latency","latency":"1s","distribution":"zipf"}]}`, "faults[0].distribution: unknown"},
		{`{"faults":[{"type":"latency","distribution":"lognormal","jitter":"1ms"}]}`, "faults[0].latency: must be positive"},
		{`{"faults":[{"type":"latency","latency":"1s","max":"10ms","distribution":"pareto"}]}`, "faults[0].max: 10ms is below"},
		{`{"faults":[{"type":"abort","percent":101}]}`, "faults[0].percent: must be within 0–100"},
		{`{"faults":[{"type":"abort","percent":-1}]}`, "faults[0].percent: must be within 0–100"},
		{`{"faults":[{"type":"abort","percent":"5"}]}`, "faults[0].percent: want number, got JSON string"},
		{`{"faults":[{"type":"teleport"}]}`, `faults[0].type: unknown fault type "teleport"`},
		{`{"faults":[{"percent":1}]}`, "faults[0].type: required"},
		{`{"faults":[{"type":"error","status":99}]}`, "faults[0].status: must be an HTTP status"},
		{`{"faults":[{"type":"error","status":600}]}`, "faults[0].status: must be an HTTP status"},
		{`{"faults":[{"type":"error","headers":{"Bad Name":"v"}}]}`, "faults[0].headers: invalid header name"},
		{`{"faults":[{"type":"error","headers":{"K":"a\r\nb"}}]}`, `faults[0].headers["K"]: value must not contain`},
		{`{"faults":[{"type":"error","headers":{"Content-Length":"1"}}]}`, "faults[0].headers: header"},
		{`{"faults":[{"type":"hang","status":500}]}`, "faults[0].status: only valid for type error"},
		{`{"faults":[{"type":"error","latency":"1s"}]}`, "faults[0].latency: only valid for type latency"},
		{`{"faults":[{"type":"abort","percent":5,"toxicity":1}]}`, `faults[0]: unknown field "toxicity"`},
		// Errors inside the list name the fault's index.
		{`{"faults":[{"type":"abort"},{"type":"abort","percent":120}]}`, "faults[1].percent: must be within 0–100, got 120"},
		{`{"faults":[{"type":"abort"},{"type":"abort","percent":"x"}]}`, "faults[1].percent: want number, got JSON string"},
		{`{"faults":[{"type":"abort"},{"type":"error","status":"x"}]}`, "faults[1].status: want integer, got JSON string"},
		{`{"faults":[{"type":"abort"},{"type":"error","headers":{"K":1}}]}`, "faults[1].headers"},
		{`{"faults":[{"type":"abort"},{"type":"abort","bogus":1}]}`, `faults[1]: unknown field "bogus"`},
		{`{"faults":[{"type":"abort"},{"type":"abort"},7]}`, "faults[2]: want object, got JSON number"},
		{`{"faults":[{"type":"abort"},{"type":"latency","latency":"zz"}]}`, "faults[1].latency: not a Go duration"},
		// The capacity fault: its own fields, a service time like a latency's, one per set.
		{`{"faults":[{"type":"capacity"}]}`, "faults[0].capacity: must be between 1 and"},
		{`{"faults":[{"type":"abort"},{"type":"capacity","capacity":0}]}`, "faults[1].capacity: must be between 1 and 1048576, got 0"},
		{`{"faults":[{"type":"abort"},{"type":"capacity","capacity":-2}]}`, "faults[1].capacity: must be between 1 and 1048576, got -2"},
		{`{"faults":[{"type":"abort"},{"type":"capacity","capacity":"4"}]}`, "faults[1].capacity: want integer, got JSON string"},
		{`{"faults":[{"type":"abort"},{"type":"capacity","capacity":4.5}]}`, "faults[1].capacity: want integer, got JSON number"},
		{`{"faults":[{"type":"abort"},{"type":"capacity","capacity":4,"queue":-1}]}`, "faults[1].queue: must be between 0 (up to 10000) and 10000, got -1"},
		{`{"faults":[{"type":"abort"},{"type":"capacity","capacity":4,"queue":10001}]}`, "faults[1].queue: must be between 0"},
		{`{"faults":[{"type":"abort"},{"type":"capacity","capacity":4,"latency":"-1ms"}]}`, "faults[1].latency: must not be negative"},
		{`{"faults":[{"type":"abort"},{"type":"capacity","capacity":4,"latency":"1ms","jitter":"2ms"}]}`, "faults[1].jitter: 2ms exceeds latency"},
		{`{"faults":[{"type":"abort"},{"type":"capacity","capacity":4,"latency":"soon"}]}`, "faults[1].latency: not a Go duration"},
		{`{"faults":[{"type":"abort"},{"type":"capacity","capacity":4,"status":503}]}`, "faults[1].status: only valid for type error"},
		{`{"faults":[{"type":"latency","capacity":4}]}`, "faults[0].capacity: only valid for type capacity"},
		{`{"faults":[{"type":"error","queue":4}]}`, "faults[0].queue: only valid for type capacity"},
		{`{"faults":[{"type":"hang","latency":"1s"}]}`, "faults[0].latency: only valid for type latency or capacity"},
		// The payload fault: a size in bytes, nothing else.
		{`{"faults":[{"type":"payload"}]}`, "faults[0].size: must be between 2 and 67108864 bytes, got 0"},
		{`{"faults":[{"type":"abort"},{"type":"payload","size":67108865}]}`, "faults[1].size: must be between 2 and 67108864 bytes, got 67108865"},
		{`{"faults":[{"type":"abort"},{"type":"payload","size":"256KiB"}]}`, "faults[1].size: want integer, got JSON string"},
		{`{"faults":[{"type":"abort"},{"type":"payload","size":1024,"status":200}]}`, "faults[1].status: only valid for type error"},
		{`{"faults":[{"type":"payload","size":1024,"latency":"1ms"}]}`, "faults[0].latency: only valid for type latency or capacity"},
		{`{"faults":[{"type":"abort"},{"type":"error","size":1024}]}`, "faults[1].size: only valid for type payload"},
		{`{"faults":[{"type":"capacity","capacity":1},{"type":"abort"},{"type":"capacity","capacity":2}]}`,
			"faults[2].type: at most one capacity fault in a set (faults[0] is one)"},
		{`{"faults":{}}`, "faults: want list, got JSON object"},
		{`{"fault":[]}`, `body: unknown field "fault"`},
		{`{"faults":[]} {}`, "body: unexpected data"},
		{`{"faults":[`, "body:"},
		{``, "body: empty"},
		{`[]`, "body: want"},
	}
	for _, tt := range tests {
		_, err := ParseFaults(strings.NewReader(tt.body))
		if err == nil {
			t.Errorf("ParseFaults(%q): no error, want %q", tt.body, tt.wantField)
			continue
		}
		if !errors.Is(err, ErrInvalidFault) {
			t.Errorf("ParseFaults(%q) = %v, does not wrap ErrInvalidFault", tt.body, err)
		}
		if !strings.Contains(err.Error(), tt.wantField) {
			t.Errorf("ParseFaults(%q) = %q, want it to contain %q", tt.body, err, tt.wantField)
		}
	}
}

func TestFaultJSONRoundTrip(t *testing.T) {
	in := []Fault{
		{Type: TypeLatency, Percent: 12.5, Params: Delay{Latency: 225 * time.Millisecond, Jitter: 10 * time.Millisecond, Distribution: DistUniform}},
		{Type: TypeLatency, Percent: 100, Params: Delay{Latency: 50 * time.Millisecond, Jitter: 5 * time.Millisecond, Distribution: DistLognormal, Max: time.Second}},
		{Type: TypeError, Percent: 0, Params: Reply{Status: 429, Body: "slow down", Headers: map[string]string{"Retry-After": "1"}}},
		{Type: TypeAbort, Percent: 5},
		{Type: TypeHang, Percent: 1},
		{Type: TypeCapacity, Percent: 75, Params: Capacity{Capacity: 4, Queue: 8, Latency: 20 * time.Millisecond, Jitter: 2 * time.Millisecond, Distribution: DistUniform}},
	}
	b, err := marshalFaults(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := ParseFaults(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("ParseFaults(%s): %v", b, err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip of %s:\n got %+v\nwant %+v", b, out, in)
	}
}
