package faultproxy

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

// TestHold: each type says how a call it fires on is held, as Little's law
// in the spec and the analysis read it.
func TestHold(t *testing.T) {
	ms := time.Millisecond
	for _, tt := range []struct {
		f    Fault
		want Hold
	}{
		{Fault{Type: TypeLatency, Params: Delay{Latency: 100 * ms, Jitter: 10 * ms}},
			Hold{Kind: HoldAdds, Mean: 100 * ms, Least: 90 * ms, Most: 110 * ms, Param: "latency", Text: "100ms (jitter 10ms)"}},
		{Fault{Type: TypeLatency, Params: Delay{Latency: 100 * ms, Jitter: 10 * ms, Distribution: DistPareto}},
			Hold{Kind: HoldAdds, Mean: 100 * ms, Least: 100 * ms, Most: Unbounded, Param: "latency", Text: "100ms (jitter 10ms)"}},
		{Fault{Type: TypeLatency, Params: Delay{Latency: 100 * ms, Jitter: 10 * ms, Distribution: DistLognormal}},
			Hold{Kind: HoldAdds, Mean: 100 * ms, Most: Unbounded, Param: "latency", Text: "100ms (jitter 10ms)"}},
		{Fault{Type: TypeError}, Hold{Kind: HoldFails}},
		{Fault{Type: TypeAbort}, Hold{Kind: HoldFails}},
		{Fault{Type: TypeHang}, Hold{Kind: HoldNever}},
		{Fault{Type: TypePayload, Params: Payload{Size: 100}}, Hold{Kind: HoldEnds}},
		{Fault{Type: TypeCapacity, Params: Capacity{Capacity: 2, Latency: 20 * ms}}, Hold{Kind: HoldAdds, Mean: 20 * ms, Most: Unbounded}},
		{Fault{Type: "teleport"}, Hold{}},
		{Fault{Type: TypeLatency, Params: Reply{}}, Hold{}},
	} {
		if got := tt.f.Hold(0); got != tt.want {
			t.Errorf("%+v: Hold %+v, want %+v", tt.f, got, tt.want)
		}
	}
}

// TestRecordedHolds: a recorded set of any plane is read by the fault
// types of this one; other planes' keys are ignored, their own types hold
// nothing, and a parameter of the wrong kind is an error.
func TestRecordedHolds(t *testing.T) {
	ms := time.Millisecond
	raw := `[{"type":"latency","percent":100,"latency":"225ms","jitter":"10ms","distribution":"uniform"},
		{"type":"latency","percent":50,"stream":"downstream","latency":"100ms","jitter":"0s"},
		{"type":"error","percent":10,"code":"57014","message":"x","match":"a"},
		{"type":"reset","percent":20,"stream":"upstream"},
		{"type":"hang","percent":1}]`
	got, err := RecordedHolds([]byte(raw), 0)
	want := []RecordedHold{
		{TypeLatency, 100, Hold{Kind: HoldAdds, Mean: 225 * ms, Least: 215 * ms, Most: 235 * ms, Param: "latency", Text: "225ms (jitter 10ms)"}},
		{TypeLatency, 50, Hold{Kind: HoldAdds, Mean: 100 * ms, Least: 100 * ms, Most: 100 * ms, Param: "latency", Text: "100ms (jitter 0s)"}},
		{TypeError, 10, Hold{Kind: HoldFails}},
		{"reset", 20, Hold{}},
		{TypeHang, 1, Hold{Kind: HoldNever}},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("RecordedHolds = %+v, %v\nwant %+v", got, err, want)
	}
	for _, bad := range []string{`{}`, `[{"type":"latency","latency":225}]`, `[{"type":"latency","latency":"soon"}]`, `[{"type":7}]`} {
		var fe *FieldError
		if _, err := RecordedHolds([]byte(bad), 0); err == nil || (bad != `{}` && bad != `[{"type":7}]` && !errors.As(err, &fe)) {
			t.Errorf("RecordedHolds(%s): error %v", bad, err)
		}
	}
}
